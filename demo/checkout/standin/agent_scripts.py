"""STAND-IN model's scripts (agensh offline demo): what the scripted model answers the real Copilot CLI, as a plan of
`bash` tool calls per agent and turn. No reasoning: the next step follows from the conversation the CLI sends.

A turn's kind comes from its prompt (the kickoff, an idle nudge, a deadline reminder, a continuation); its step is the
number of tool results since that prompt. The first step of a kickoff looks around (`baseline=`, `workers=`), and its
output picks the plan: the baseline writes the solution into its workspace; in a team, agent 1 (the solver) clones
the task repository from Gitea, writes the solution, pushes a branch and merges a pull request through Gitea's API,
then tries to read the reference binary's bytes and runs it; every other agent commits a note on its branch, posts on
the board and in the chat, and agent 2 tries a direct push to main (refused by its protection).
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

import standin

AGENT_RE = re.compile(r"\b([a-z0-9][a-z0-9_.-]*__[a-z0-9][a-z0-9_.-]*\.[0-9a-f]{7,40}-(\d+))\b")


@dataclass(frozen=True)
class Step:
    """One tool call: what the CLI shows (`description`) and the command its `bash` tool runs."""

    description: str
    command: str


def heredoc(path: str, text: str) -> str:
    return f"cat > {path} <<'AGENSH_EOF'\n{text}AGENSH_EOF\nchmod 0755 {path}"


SOLUTION_FILES = "\n".join(heredoc(name, text) for name, text in standin.SOLUTION.items())

GITEA_API = """python3 - <<'AGENSH_EOF'
import json, os, time, urllib.error, urllib.request
token = open(os.path.expanduser("~/.gitea-token")).read().strip()
api = os.environ["GITEA_URL"].rstrip("/") + "/api/v1/repos/" + os.environ["TEAM_REPO"]
def call(method, path, body):
    req = urllib.request.Request(api + path, json.dumps(body).encode(), method=method,
                                 headers={"Authorization": "token " + token, "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, json.loads(r.read() or b"{}")
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}")
%s
AGENSH_EOF"""

OPEN_AND_MERGE = (
    GITEA_API
    % """title = os.environ["AGENT_ID"] + " solution"
status, pr = call("POST", "/pulls", {"head": "agent-1", "base": "main", "title": title})
assert status == 201, (status, pr)
for _ in range(60):  # Gitea answers 405 "Please try again later" while it checks mergeability
    status, reply = call("POST", "/pulls/%d/merge" % pr["number"], {"Do": "merge"})
    if status != 405:
        break
    time.sleep(1)
assert status == 200, (status, reply)
print("opened and merged pull #%d (agent-1 -> main, zero approvals)" % pr["number"])"""
)


def setup_git(user: str) -> Step:
    helper = f'!f() {{ echo "username={user}"; echo "password=$(cat ~/.gitea-token)"; }}; f'
    return Step(
        "Fetch my Gitea token and set up Git",
        "\n".join(
            [
                "set -e",
                "python3 -c 'import json, os, urllib.request; print(json.load(urllib.request.urlopen("
                'os.environ["TOKEN_SERVICE_URL"].rstrip("/") + "/token/" + os.environ["AGENT_ID"]))["token"])\''
                " > ~/.gitea-token",
                "chmod 600 ~/.gitea-token",
                'git config --global user.name "$AGENT_ID"',
                'git config --global user.email "$AGENT_ID@agensh.local"',
                f"git config --global credential.helper {shlex.quote(helper)}",
                'echo "token saved; git configured as $AGENT_ID"',
            ]
        ),
    )


CLONE = Step(
    "Clone the task repository from Gitea",
    "\n".join(
        [
            "set -e",
            "cd /workspace",
            'url="$GITEA_URL/$TEAM_REPO.git"',
            'for i in $(seq 200); do git ls-remote "$url" refs/heads/main | grep -q . && break; sleep 3; done',
            '[ -d .git ] || { git init -q -b main; git remote add origin "$url"; }',
            "git fetch -q origin main && git checkout -q -f -B main origin/main",
            "printf 'scratch/\\n' > .git/info/exclude && mkdir -p scratch",
            'echo "ignored scratch file of $AGENT_ID" > scratch/notes.txt',
            "git log --oneline -1",
        ]
    ),
)

READ_REFERENCE = Step(
    "Compare with the reference binary",
    "\n".join(
        [
            'cat /opt/pbench/executable > /tmp/reference.copy; echo "cat exit $?"',
            'cp /opt/pbench/executable /tmp/reference.cp; echo "cp exit $?"',
            '/opt/pbench/executable; echo "run exit $?"',
        ]
    ),
)


def direct_push(branch: str) -> Step:
    return Step(
        "Try a direct push to main",
        "\n".join(
            [
                "cd /workspace",
                "git fetch -q origin main",
                "git checkout -q -B direct-main-attempt origin/main",
                "mkdir -p notes && echo 'This commit must never reach main.' > notes/direct-push.md",
                "git add notes/direct-push.md && git commit -q -m 'direct push to main (must be refused)'",
                'if git push origin HEAD:refs/heads/main; then echo "ERROR: direct push to main was ACCEPTED"; '
                'else echo "direct push to main refused, as it should be"; fi',
                f"git checkout -q {branch} && git branch -q -D direct-main-attempt",
            ]
        ),
    )


def solver(user: str, workers: int) -> list[Step]:
    steps = [
        setup_git(user),
        CLONE,
        Step(
            "Write the solution", "set -e\ncd /workspace\n" + SOLUTION_FILES + "\nsh compile.sh && ./executable 6 '*' 7"
        ),
        Step(
            "Commit and push my branch",
            "set -e\ncd /workspace\ngit checkout -q -B agent-1\n"
            f"git add {' '.join(standin.SOLUTION)}\n"
            'git commit -q -m "$AGENT_ID: calculator solution (scripted)"\n'
            "git push -q -f origin agent-1:refs/heads/agent-1\necho 'pushed branch agent-1'",
        ),
        Step("Open and merge a pull request", OPEN_AND_MERGE),
        READ_REFERENCE,
    ]
    return steps + ([direct_push("agent-1")] if workers < 2 else [])


def peer(user: str, n: int) -> list[Step]:
    branch = f"agent-{n}"
    board = (
        "python3 -c 'import json, os, urllib.request; r = urllib.request.urlopen(urllib.request.Request("
        'os.environ["BOARD_URL"].rstrip("/") + "/board/" + os.environ["TASK_ID"] + "/lifecycle", '
        'json.dumps({"agent": os.environ["AGENT_ID"], "event": "claim", "what": "notes"}).encode(), '
        '{"Content-Type": "application/json"}), timeout=30); print("board:", r.status)\''
    )
    chat = (
        "python3 - <<'AGENSH_EOF'\nimport json, os, urllib.request\n"
        "api = os.environ['MATTERMOST_URL'].rstrip('/') + '/api/v4'\n"
        "def call(method, path, body=None, session=''):\n"
        "    req = urllib.request.Request(api + path, None if body is None else json.dumps(body).encode(), "
        "method=method, headers={'Content-Type': 'application/json', **({'Authorization': 'Bearer ' + session} "
        "if session else {})})\n"
        "    with urllib.request.urlopen(req, timeout=30) as r:\n        return json.loads(r.read()), r.headers\n"
        f"_, h = call('POST', '/users/login', {{'login_id': '{user}', "
        "'password': open(os.path.expanduser('~/.gitea-token')).read().strip()})\n"
        "channel = call('GET', '/teams/name/pbench/channels/name/town-square', session=h['Token'])[0]\n"
        f"post = call('POST', '/posts', {{'channel_id': channel['id'], 'message': 'notes pushed on {branch}'}}, "
        "session=h['Token'])[0]\nprint('chat: posted', post['id'])\nAGENSH_EOF"
    )
    steps = [
        setup_git(user),
        CLONE,
        Step(
            "Commit a note on my branch",
            "\n".join(
                [
                    "set -e",
                    "cd /workspace",
                    f"git checkout -q -B {branch}",
                    "mkdir -p notes",
                    'printf "# %s\\n\\nScripted notes.\\n" "$AGENT_ID" > "notes/$AGENT_ID.md"',
                    'git add "notes/$AGENT_ID.md" && git commit -q -m "$AGENT_ID: notes (scripted)"',
                    f"git push -q -f origin {branch}:refs/heads/{branch}",
                    f"echo 'pushed branch {branch}'",
                ]
            ),
        ),
        Step("Claim on the board", board),
        Step("Tell the team", chat),
    ]
    return steps + ([direct_push(branch)] if n == 2 else [])


BASELINE = [
    Step(
        "Write the solution into my workspace",
        "set -e\ncd /workspace\n" + SOLUTION_FILES + "\n"
        "printf 'scratch/\\n' > .git/info/exclude && mkdir -p scratch\n"
        'echo "ignored scratch file of $AGENT_ID" > scratch/notes.txt\n'
        "sh compile.sh && ./executable 6 '*' 7",
    )
]

LOOK = Step("Look around", 'echo "baseline=${BASELINE:-0} workers=${WORKERS:-1}"; id -u; pwd')


def turn_kind(prompt: str) -> str:
    if "no activity from you" in prompt:
        return "nudge"
    if prompt.startswith("Reminder:"):
        return "reminder"
    if prompt.startswith("Continue with the task"):
        return "continue"
    return "kickoff" if "Kickoff" in prompt else "other"


def plan(kind: str, agent: str, n: int, looked: str, idle_s: int) -> list[Step]:
    """The tool calls of one turn; the turn ends with a message after the last."""
    if kind == "continue":
        return [Step("Wait for my peers", f"sleep {idle_s}; echo 'nothing new'")]
    if kind != "kickoff":
        return []
    user = standin.agent_username(agent)
    if "baseline=1" in looked:
        return [LOOK, *BASELINE]
    workers = int(m.group(1)) if (m := re.search(r"workers=(\d+)", looked)) else 1
    return [LOOK, *(solver(user, workers) if n == 1 else peer(user, n))]


FINAL = {
    "kickoff": "My part of the task is done and merged or pushed.",
    "nudge": "Back at it: checking the board.",
    "reminder": "Noted the deadline.",
    "continue": "Nothing new; waiting for my peers.",
    "other": "Noted.",
}


def text(item: dict) -> str:
    """A message item's text (its content parts, or a plain string)."""
    content = item.get("content")
    if isinstance(content, list):
        return " ".join(c.get("text", "") for c in content if isinstance(c, dict))
    return str(content or "")


def next_item(body: dict, idle_s: int) -> tuple[str, Step | str]:
    """From a Responses request's `input`: (agent id, the next tool call, or the turn's final message)."""
    items = [i for i in body.get("input") or [] if isinstance(i, dict)]
    users = [k for k, i in enumerate(items) if i.get("role") == "user"]
    found = next(filter(None, (AGENT_RE.search(text(items[k])) for k in users)), None)
    agent, n = (found.group(1), int(found.group(2))) if found else ("unknown", 0)
    last = users[-1] if users else -1
    prompt = text(items[last]).split("</current_datetime>")[-1].strip() if users else ""
    # the first prompt of a session starts with who the agent is, then the kickoff
    prompt = prompt.split("\n\n", 1)[1] if prompt.startswith("You are agent ") and "\n\n" in prompt else prompt
    outputs = [str(i.get("output", "")) for i in items[last + 1 :] if i.get("type") == "function_call_output"]
    kind = turn_kind(prompt)
    steps = plan(kind, agent, n, outputs[0] if outputs else "", idle_s)
    return agent, steps[len(outputs)] if len(outputs) < len(steps) else FINAL[kind]
