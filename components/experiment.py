"""Experiment: the top-level component of one profile stack (DESIGN.md, "The stack's graph").

    HostUnits, Networks, Images -> Preflight(host) -> Manifest(start) -> Platform -> Preflight(model)
    per task k: Seed(k) -> Team(k) -> Kickoff(k) -> Export(k) (beside it Reminders(k)) -> Shutdown(k)
                -> Evaluate(k) -> Score(k)
    Seed(k+1) waits for Shutdown(k) only, so Evaluate(k) overlaps task k+1. Manifest(finish) follows every Score.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pulumi

from . import naming, services
from .host_units import HostUnits
from .images import Images
from .networks import Networks
from .platform import Platform
from .profile import Profile
from .steps import Step, receipt
from .team import Team
from .topology import network_names, placements


def checkout_revision(path: Path) -> str | None:
    out = subprocess.run(["git", "-C", str(path), "rev-parse", "HEAD"], capture_output=True, text=True)
    return out.stdout.strip() or None


class Experiment(pulumi.ComponentResource):
    def __init__(self, name: str, profile: Profile, secrets: dict[str, pulumi.Output[str]], project_dir: Path,
                 opts: pulumi.ResourceOptions | None = None):
        super().__init__("agensh:index:Experiment", name, None, opts)
        p = profile
        checkout = p.checkout_path(project_dir)
        revision = checkout_revision(checkout)
        run_dir = str(p.run_dir())

        def opts_(*deps: Any) -> pulumi.ResourceOptions:
            return pulumi.ResourceOptions(parent=self, depends_on=[d for d in deps if d is not None])

        data = Step(f"{name}-profile-data", "profile_data", {"profile_dir": str(p.run_dir().parent), "profile": p.profile},
                    opts_(), args="create", delete=f"{Step.python()} -m scripts.profile_data delete")
        self.host_units = None
        if p.host_units != "off":
            key = Path(p.ssh_key_path).expanduser().read_text() if p.ssh_key_path else None
            self.host_units = HostUnits(f"{name}-host", p, opts_(), pulumi.Output.secret(key) if key else None)
        self.networks = Networks(f"{name}-net", p, opts_())
        self.images = Images(f"{name}-images", p, checkout, revision, opts_())

        self.teams: list[Team] = []
        if not p.run_steps:  # the bare topology: services after the host units, each team after the services
            self.platform = Platform(f"{name}-platform", p, self.networks, self.images, secrets,
                                     [d for d in (data, self.host_units) if d is not None], opts_())
            self.teams = [Team(f"{name}-{naming.task_slug(t)}", p, t, self.networks, self.images, secrets,
                               [self.platform], opts_()) for t in p.tasks]
            record: pulumi.Input[dict[str, Any]] = {"steps": "off"}
        else:
            record = self._steps(name, p, secrets, project_dir, checkout, revision, run_dir, data, opts_)
        self.outputs = {
            "profile": p.profile,
            "run_id": p.run_id,
            "run_dir": run_dir,
            "profile_digest": p.digest(),
            "networks": {k: str(n) for k, n in (("internal", p.internal_network), ("egress", p.egress_network),
                                                ("operator", p.operator_network)) if n},
            "addresses": {c.name: {k: v for k, v in (("internal", c.internal_ip), ("egress", c.egress_ip),
                                                     ("operator", c.operator_ip)) if v} for c in placements(p)},
            "ports": p.ports,
            "images": self.images.ids,
            "host_units": self.host_units.receipt if self.host_units else "off",
            "provenance": record,
            **({"pair": pair(p, record)} if p.pair_with and p.kind == "baseline" else {}),
        }
        self.register_outputs(self.outputs)

    def _steps(self, name: str, p: Profile, secrets: dict[str, pulumi.Output[str]], project_dir: Path, checkout: Path,
               revision: str | None, run_dir: str, data: Step, opts_: Any) -> pulumi.Output[dict[str, Any]]:
        """Preflight, manifest, platform and per-task steps in the order of the module docstring; returns the
        provenance record."""
        worker_images = [p.worker_image(t) for t in p.tasks]
        preflight = Step(f"{name}-preflight-host", "preflight", {
            "run_dir": run_dir, "profile": p.profile, "host_units": p.host_units,
            "host_units_receipt": self.host_units.receipt if self.host_units else "",
            "images": sorted(self.images.names), "worker_images": worker_images,
            "revisioned_images": [p.image(r) for r in ("mini-router", "board") if p.kind == "team"],
            "checkout_revision": revision,
            "subnets": [str(n) for n in (p.internal_network, p.egress_network, p.operator_network) if n],
            "networks": sorted(network_names(p).values()), "ports": sorted(p.ports.values()),
        }, opts_(data, self.networks, self.images, self.host_units), args="host", once_per_run=p.run_id)
        manifest = Step(f"{name}-manifest-start", "manifest", {
            "run_dir": run_dir, "project_dir": str(project_dir), "checkout": str(checkout),
            "profile": p.model_dump(mode="json"), "profile_digest": p.digest(), "images": self.images.ids,
        }, opts_(preflight), args="start", once_per_run=p.run_id)
        self.platform = Platform(f"{name}-platform", p, self.networks, self.images, secrets,
                                 [d for d in (manifest, self.host_units) if d is not None], opts_())
        model_check = Step(f"{name}-preflight-model", "preflight", {
            "run_dir": run_dir, "model": p.model, "effort": p.reasoning_effort,
            "proxy_url": services.url(p, "egress-proxy"),
        }, opts_(self.platform), args="model", secrets={"AGENSH_PROXY_TOKEN": secrets["worker_proxy_token"]},
            once_per_run=p.run_id)

        scores: list[Step] = []
        previous_shutdown: Step | None = None
        run_task = self._baseline_task if p.kind == "baseline" else self._team_task
        for task in p.tasks:
            slug = naming.task_slug(task)
            base = {"run_dir": run_dir, "task_id": task}
            shutdown = run_task(name, p, task, base, secrets, checkout, opts_, [model_check, previous_shutdown])
            previous_shutdown = shutdown
            if p.skip_eval:
                continue
            evaluate = Step(f"{name}-{slug}-evaluate", "evaluate", {
                **base, "docker_cpus": p.eval_docker_cpus, "pytest_addopts": p.eval_pytest_addopts,
                "memory_gib": p.eval_memory_gib, "docker_org": p.cleanroom_org, "blob_dir": p.eval_blob_dir,
                "profile": p.profile, "attempt": p.eval_attempt,
            }, opts_(shutdown), triggers=[p.eval_attempt])
            scores.append(Step(f"{name}-{slug}-score", "score", {**base, "attempt": p.eval_attempt}, opts_(evaluate),
                               triggers=[p.eval_attempt]))
        finish = Step(f"{name}-manifest-finish", "manifest", {
            "run_dir": run_dir, "project_dir": str(project_dir), "checkout": str(checkout),
            "profile": p.model_dump(mode="json"), "profile_digest": p.digest(), "attempt": p.eval_attempt,
        }, opts_(*scores, previous_shutdown), args="finish", triggers=[p.eval_attempt])

        return pulumi.Output.all(
            manifest=receipt(manifest.stdout), finish=receipt(finish.stdout),
            scores=pulumi.Output.all(*[receipt(s.stdout) for s in scores]),
        ).apply(lambda r: provenance(p, r))

    def _team_task(self, name: str, p: Profile, task: str, base: dict[str, Any], secrets: dict[str, pulumi.Output[str]],
                   checkout: Path, opts_: Any, after: list[Any]) -> Step:
        """Seed -> routers and workers -> kickoff -> export -> shutdown; returns the shutdown step."""
        slug = naming.task_slug(task)
        gitea = {"gitea_url": services.url(p, "gitea"), "gitea_user": services.ADMIN_USER,
                 "repo": f"{services.TEAM_ORG}/{slug}", "gitea_repositories": services.gitea_repositories(p)}
        workers = [c for c in placements(p) if c.task == task and c.role == "worker"]
        gitea_password = {"AGENSH_GITEA_PASSWORD": secrets["gitea_admin_password"]}
        seed = Step(f"{name}-{slug}-seed", "seed", {
            **base, **gitea, "cleanroom_image": p.cleanroom_image(task),
            "archive_dirs": [services.archive_dir(p, f"{task}-{c.index}") for c in workers],
        }, opts_(*after), secrets=gitea_password)
        team = Team(f"{name}-{slug}", p, task, self.networks, self.images, secrets, [seed], opts_())
        self.teams.append(team)
        kickoff = Step(f"{name}-{slug}-kickoff", "kickoff", {
            **base, "mattermost_url": services.url(p, "mattermost"), "mattermost_user": services.ADMIN_USER,
            "prompt": str(checkout / "prompts" / "kickoff.md"), "budget_s": p.task_budget.budget_s,
            "kickoff_s": p.task_budget.kickoff_s,
        }, opts_(team), secrets={"AGENSH_MATTERMOST_PASSWORD": secrets["mattermost_admin_password"]})
        export = Step(f"{name}-{slug}-export", "export", {**base, **gitea}, opts_(kickoff), secrets=gitea_password)
        reminders = Step(f"{name}-{slug}-reminders", "reminders", {
            **base, "mattermost_url": services.url(p, "mattermost"), "mattermost_user": services.ADMIN_USER,
            "minutes": p.reminder_minutes,
        }, opts_(kickoff), secrets={"AGENSH_MATTERMOST_PASSWORD": secrets["mattermost_admin_password"]})
        return Step(f"{name}-{slug}-shutdown", "shutdown", {
            **base, "grace_s": p.export_grace_s,
            "workers": {c.name: services.archive_dir(p, f"{task}-{c.index}") for c in workers},
            "routers": [c.name for c in placements(p) if c.task == task and c.role == "router"],
        }, opts_(export, reminders))

    def _baseline_task(self, name: str, p: Profile, task: str, base: dict[str, Any],
                       secrets: dict[str, pulumi.Output[str]], checkout: Path, opts_: Any, after: list[Any]) -> Step:
        """Seed the host workspace -> worker and snapshot sidecar -> stop at the deadline (archive, commit the rest,
        export); returns the stop step, whose receipt is the task's shutdown receipt."""
        slug = naming.task_slug(task)
        by_role = {c.role: c for c in placements(p) if c.task == task}
        agent = f"{task}-1"
        workspace = services.data_dir(p, "workspace")
        seed = Step(f"{name}-{slug}-baseline-seed", "baseline", {
            **base, "workspace": workspace, "cleanroom_image": p.cleanroom_image(task), "budget_s": p.task_budget.budget_s,
            "archive_dirs": [services.archive_dir(p, agent)],
            "provenance": {"profile": p.model_dump(mode="json"), "profile_digest": p.digest(),
                           "worker_image": p.worker_image(task), "cleanroom_image": p.cleanroom_image(task)},
        }, opts_(*after), args="seed")
        team = Team(f"{name}-{slug}", p, task, self.networks, self.images, secrets, [seed], opts_())
        self.teams.append(team)
        return Step(f"{name}-{slug}-baseline-stop", "baseline", {
            **base, "workspace": workspace, "worker": by_role["worker"].name, "sidecar": by_role["snapshot"].name,
            "archive_dir": services.archive_dir(p, agent), "grace_s": p.export_grace_s,
        }, opts_(team), args="stop")


def pair(p: Profile, record: pulumi.Input[dict[str, Any]]) -> pulumi.Output[dict[str, Any]]:
    """This baseline's score beside the team stack's score for the same task (when both exist)."""
    team = pulumi.StackReference(f"organization/{pulumi.get_project()}/{p.pair_with}")
    return pulumi.Output.all(mine=record, theirs=team.get_output("provenance")).apply(lambda r: {
        task: {"baseline": (r["mine"] or {}).get("scores", {}).get(task, {}).get("score"),
               "team": ((r["theirs"] or {}).get("scores") or {}).get(task, {}).get("score"), "team_stack": p.pair_with}
        for task in p.tasks})


def provenance(p: Profile, r: dict[str, Any]) -> dict[str, Any]:
    """The record of what ran: the manifest as written first, each task's score, the final counts. No secrets."""
    return {
        "profile": p.profile, "run_id": p.run_id, "profile_digest": p.digest(),
        "manifest": r["manifest"].get("manifest_content", r["manifest"]),
        "scores": {s.get("task_id"): {k: s.get(k) for k in ("score", "complete", "problems")} for s in r["scores"] if s},
        "result": {k: r["finish"].get(k) for k in ("completed", "failed", "scores")},
    }
