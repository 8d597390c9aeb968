"""The team channel (Mattermost REST API v4): the administrator posts kickoff messages, reminders and nudges."""

from __future__ import annotations

from typing import Any

from model import contract
from scripts.lib.http import request


def post_to_team(url: str, user: str, password: str, message: str) -> dict[str, Any]:
    """Post to the team channel as the administrator: log in, find the channel, post."""
    mm = url.rstrip("/")
    _, _, headers = request("POST", f"{mm}/api/v4/users/login", {"login_id": user, "password": password})
    token = headers.get("Token") or headers.get("token")
    _, channel, _ = request(
        "GET", f"{mm}/api/v4/teams/name/{contract.TEAM_NAME}/channels/name/{contract.TEAM_CHANNEL}", token=token
    )
    _, post, _ = request("POST", f"{mm}/api/v4/posts", {"channel_id": channel["id"], "message": message}, token=token)
    return post
