"""Experiment: the top-level component of one profile stack (docs/design.md, "The stack's graph").

HostUnits, Networks, Images -> Preflight(host) -> Manifest(start) -> egress proxy (+ stand-in model)
    -> Preflight(model) -> the other platform services
per task k: Seed(k) -> Team(k) (workers created stopped) -> Wake(k) -> Kickoff(k)
            -> Export(k) (beside it Reminders(k) and Nudges(k)) -> Shutdown(k) -> Evaluate(k) -> Score(k)
            -> Preserve(k)
Seed(k+1) waits for Shutdown(k) only, so Evaluate(k) overlaps task k+1. Manifest(finish) follows every
Preserve, then Report, then Preserve(run): the last step, so the first a destroy deletes (its delete refuses
while any result lacks its verified copy).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pulumi

from model import contract, records, steps
from model import step_inputs as si
from model.checkout import KICKOFF, revision
from model.parts import WHOLE, Part
from model.profile import Profile
from model.roles import ROLES
from model.rundir import CopyDir, ProfileDir, RunDir
from model.services import operator_url, ready_url, spec
from model.topology import Layout

from .containers import Declare, declarer, network_names
from .host_units import HostUnits
from .images import Images
from .networks import Networks
from .platform import Platform
from .step_resources import Step
from .swarm import Swarm
from .team import Team


class Experiment(pulumi.ComponentResource):
    def __init__(
        self,
        name: str,
        profile: Profile,
        secrets: dict[str, pulumi.Output[str]],
        project_dir: Path,
        part: Part = WHOLE,
        opts: pulumi.ResourceOptions | None = None,
    ):
        """`part`: what this stack declares of the profile (model/parts.py); the whole of it unless the profile runs
        per task."""
        super().__init__("agensh:index:Experiment", name, None, opts)
        p = profile
        self.name, self.p, self.secrets, self.project_dir, self.part = name, p, secrets, project_dir, part
        self.checkout = p.checkout_path(project_dir)
        self.revision = revision(self.checkout)
        self.run_dir = str(RunDir.of(p).path)
        self.copy_dir = str(CopyDir.of(p.traj_root, p.profile, p.run_id).path)
        self.layout = layout = Layout.of(p)
        self.data_inputs = si.ProfileDataInputs(
            profile_dir=str(ProfileDir.of(p).path), profile=p.profile, traj_root=p.traj_root
        )
        self.swarm: Swarm | None = None
        self.host_units: HostUnits | None = None
        self.units: list[HostUnits] = []  # the slice and guard every container waits for: this host's, each node's
        self.networks: Networks | None = None
        self.images: Images | None = None
        self.docker_env: dict[str, str] = {}
        self.teams: list[Team] = []
        data = self._platform_resources() if part.platform else None
        if not part.platform:  # a task's stack: the platform's stack made the networks and images
            self.declare: Declare = declarer(p, layout.network_names, secrets, None)
        if not p.run_steps:  # the bare topology: services after the host units, each team after the services
            after: list[pulumi.Resource] = []
            if data is not None:
                self.platform = Platform(f"{name}-platform", layout, self.declare, [data, *self.units], self.opts())
                after = [self.platform]
            self.teams = [
                Team(f"{name}-{contract.task_slug(t)}", layout, t, self.declare, after, self.opts())
                for t in p.tasks
                if part.declares(t)
            ]
            record: pulumi.Input[dict[str, Any]] | None = {"steps": "off"}
        else:
            record = self._steps(data)
        self.outputs = {
            "profile": p.profile,
            "run_id": p.run_id,
            "run_dir": self.run_dir,
            "profile_digest": p.digest(),
            **({"task": part.task} if part.task else {}),
            **(self._platform_outputs() if part.platform else {}),
            **(
                {
                    "report": str(RunDir.of(p).report) if p.run_steps else None,
                    "copy": self.copy_dir if p.run_steps else None,
                    "provenance": record,
                    **(
                        {"pair": pair(p, record)} if record is not None and p.pair_with and p.kind == "baseline" else {}
                    ),
                }
                if part.record
                else {}
            ),
        }
        self.register_outputs(self.outputs)

    def _platform_resources(self) -> Step:
        """The profile's data step, the engine, host units, networks and images; returns the data step."""
        name, p, layout, secrets = self.name, self.p, self.layout, self.secrets
        data = Step(name, steps.PROFILE_DATA, self.data_inputs, self.opts())
        # the engine: this host's Docker, or a swarm through its manager (components/swarm.py)
        self.swarm = (
            Swarm(f"{name}-swarm", p, layout, secrets, self.checkout, self.opts()) if p.engine == "swarm" else None
        )
        if p.host_units != "off":
            key = Path(p.ssh_key_path).expanduser().read_text() if p.ssh_key_path else None
            ssh_key = pulumi.Output.secret(key) if key else None
            self.host_units = HostUnits(f"{name}-host", p, self.opts(), ssh_key)
            self.units = [self.host_units, *(self.swarm.host_units(ssh_key, self.opts()) if self.swarm else [])]
        self.docker_env = {"DOCKER_HOST": self.swarm.s.docker_host} if self.swarm else {}
        engine = (
            self.opts()
            if self.swarm is None
            else pulumi.ResourceOptions(parent=self, providers={"docker": self.swarm.provider})
        )
        self.networks = Networks(f"{name}-net", p, layout, self.opts()) if self.swarm is None else None
        self.images = Images(f"{name}-images", p, self.checkout, self.revision, engine)
        if self.swarm is not None:
            self.swarm.publish(self.images)
            data = self.swarm.prepare_nodes(data, self.opts(data))
            self.declare = self.swarm.declare
        else:
            assert self.networks is not None
            self.declare = declarer(p, network_names(self.networks), secrets, self.images)
        return data

    def _platform_outputs(self) -> dict[str, Any]:
        p, layout = self.p, self.layout
        assert self.images is not None
        return {
            "networks": {k: str(n) for k, n in layout.networks.items()},
            "addresses": {c.name: c.addresses for c in layout.placements}
            if self.swarm is None
            else {},  # a swarm's services have names, no fixed addresses
            **({"nodes": {c.name: self.swarm.on(c).name for c in layout.placements}} if self.swarm else {}),
            "ports": p.ports,
            "images": self.images.ids,
            **({"registry_digests": self.swarm.digests} if self.swarm else {}),
            "host_units": self.host_units.receipt if self.host_units else "off",
        }

    def opts(self, *deps: Any) -> pulumi.ResourceOptions:
        return pulumi.ResourceOptions(parent=self, depends_on=[d for d in deps if d is not None])

    def _steps(self, data: Step | None) -> pulumi.Output[dict[str, Any]] | None:
        """Preflight, manifest, platform, per-task and final steps in the order of the module docstring, those of
        this stack's part; returns the provenance record where the part holds it."""
        name, p, part = self.name, self.p, self.part
        manifest_inputs = si.ManifestInputs(
            run_dir=self.run_dir,
            project_dir=str(self.project_dir),
            checkout=str(self.checkout),
            profile=p.model_dump(mode="json"),
            profile_digest=p.digest(),
            attempt=p.eval_attempt,
            copy_dir=self.copy_dir,
            start_at=p.start_at,
        )
        manifest: Step | None = None
        after: list[Any] = []
        if part.platform:
            assert data is not None
            manifest = self._platform_steps(data, manifest_inputs)
            after = [self.platform.gate, self.platform, self.platform_checked]
        elif not pulumi.runtime.is_dry_run():
            self._require_before(part)

        scores: list[Step] = []
        copies: list[Step] = []
        previous_shutdown: Step | None = None
        run_task = self._baseline_task if p.kind == "baseline" else self._team_task
        for task in p.tasks:
            if not part.declares(task):
                continue
            slug = contract.task_slug(task)
            shutdown = run_task(task, [*after, previous_shutdown])
            previous_shutdown = shutdown
            last: Step = shutdown
            if not p.skip_eval:
                evaluate = Step(
                    f"{name}-{slug}",
                    steps.EVALUATE,
                    si.EvaluateInputs(
                        run_dir=self.run_dir,
                        task_id=task,
                        docker_cpus=p.eval_docker_cpus,
                        pytest_addopts=p.eval_pytest_addopts,
                        memory_gib=p.eval_memory_gib,
                        docker_org=p.cleanroom_org,
                        blob_dir=p.eval_blob_dir,
                        profile=p.profile,
                        attempt=p.eval_attempt,
                    ),
                    self.opts(shutdown),
                    triggers=[p.eval_attempt],
                    env=self.docker_env,
                )
                last = Step(
                    f"{name}-{slug}",
                    steps.SCORE,
                    si.ScoreInputs(run_dir=self.run_dir, task_id=task, attempt=p.eval_attempt),
                    self.opts(evaluate),
                    triggers=[p.eval_attempt],
                )
                scores.append(last)
            copies.append(
                Step(
                    f"{name}-{slug}",
                    steps.PRESERVE_TASK,
                    si.PreserveInputs(
                        run_dir=self.run_dir, task_id=task, copy_dir=self.copy_dir, archive_dirs=self._archives(task)
                    ),
                    self.opts(last),
                    triggers=[p.eval_attempt],
                )
            )
        if not part.record:
            return None
        finish = Step(name, steps.MANIFEST_FINISH, manifest_inputs, self.opts(*copies), triggers=[p.eval_attempt])
        report = Step(name, steps.REPORT, si.Inputs(run_dir=self.run_dir), self.opts(finish), triggers=[p.eval_attempt])
        # The run's last step, so the first a destroy deletes: its delete refuses while results would be lost.
        Step(
            name,
            steps.PRESERVE_RUN,
            si.PreserveInputs(
                run_dir=self.run_dir,
                task_id=None,
                copy_dir=self.copy_dir,
                archive_dirs={a: d for t in p.tasks for a, d in self._archives(t).items()},
                guard=self.data_inputs,
            ),
            self.opts(report),
            triggers=[p.eval_attempt],
        )

        # The record of the run: in one stack from the steps' receipts; in the record's stack of a per-task profile,
        # the manifest's and the scores' receipts from the run directory (their stacks ran before this one).
        rd = RunDir.of(p)
        earlier = pulumi.Output.from_input(
            [manifest.receipt, *(s.receipt for s in scores)]
            if manifest
            else [
                steps.read_receipt(rd, steps.MANIFEST_START),
                *(() if p.skip_eval else (steps.read_receipt(rd, steps.SCORE, t) for t in p.tasks)),
            ]
        )
        # the gate runs after `up` (scripts/cli/gate.py); the next `up` shows its verdict here
        return pulumi.Output.all(earlier, finish.receipt).apply(
            lambda r: records.provenance(
                p.profile,
                p.run_id,
                p.digest(),
                r[0][0],
                list(r[0][1:]),
                r[1],
                records.read_record(rd.gate, records.GateResult),
            ).model_dump(mode="json")
        )

    def _platform_steps(self, data: Step, manifest_inputs: si.ManifestInputs) -> Step:
        """Preflight, the first manifest, the platform services and the model check; returns the manifest step."""
        name, p, secrets = self.name, self.p, self.secrets
        assert self.images is not None
        preflight = Step(
            name,
            steps.PREFLIGHT_HOST,
            si.preflight_host(p, self.layout, self.checkout, self.revision),
            self.opts(data, self.networks, self.images, *self.units),
            once_per_run=p.run_id,
            late={"host_units_receipt": self.host_units.receipt} if self.host_units else None,
            env=self.docker_env,
        )
        images = (
            self.images.ids
            if self.swarm is None
            else pulumi.Output.all(self.images.ids, self.swarm.digests).apply(lambda both: {**both[0], **both[1]})
        )  # on a swarm, the registry digest each node ran, not the manager's id
        manifest = Step(
            name,
            steps.MANIFEST_START,
            manifest_inputs,
            self.opts(preflight),
            once_per_run=p.run_id,
            late={"images": images},
        )
        self.platform = Platform(
            f"{name}-platform",
            self.layout,
            self.declare,
            [manifest, *self.units],
            self.opts(),
            gate=lambda model_path: Step(
                name,
                steps.PREFLIGHT_MODEL,
                si.preflight_model(p),
                self.opts(*model_path),
                secrets={"AGENSH_PROXY_TOKEN": secrets["worker_proxy_token"]},
                once_per_run=p.run_id,
            ),
        )
        self.platform_checked = Step(
            name,
            steps.PREFLIGHT_PLATFORM,
            si.PreflightPlatformInputs(run_dir=self.run_dir),
            self.opts(self.platform),
            late={"one_shots": self.platform.one_shots()},
        )
        return manifest

    def _require_before(self, part: Part) -> None:
        """A part stack's update refuses before the stacks it follows are done (scripts/cli/launch.py runs them in
        order): a task's after the platform's last check and the previous task's shutdown, the record's after every
        task's copy. It reads their receipts in the run directory."""
        p, rd = self.p, RunDir.of(self.p)
        shutdown = steps.BASELINE_STOP if p.kind == "baseline" else steps.SHUTDOWN
        if part.kind == "task":
            assert part.task is not None
            k = p.tasks.index(part.task)
            needed = [(steps.PREFLIGHT_PLATFORM, None), *([(shutdown, p.tasks[k - 1])] if k else [])]
        else:
            needed = [(steps.PRESERVE_TASK, t) for t in p.tasks]
        missing = [
            f"{step.name}{f' of {task}' if task else ''}"
            for step, task in needed
            if records.ok_result(steps.read_receipt(rd, step, task), steps.RESULTS[step.name]) is None
        ]
        if missing:
            raise pulumi.RunError(
                f"this stack follows others of profile {p.profile} that are not done ({', '.join(missing)} has no "
                f"receipt in {rd.path}); launch the profile with `make up STACK=<its stack>` (scripts/cli/launch.py)"
            )

    def _platform_containers(self) -> list[str]:
        """The platform's long-running containers (not the one-shot bootstrap), by name."""
        return [c.name for c in self.layout.placements if not ROLES[c.role].per_task and not spec(self.p, c).one_shot]

    def _routers(self, task: str) -> dict[str, str]:
        """Each worker of a task, and its router, by name."""
        routers = {c.index: c.name for c in self.layout.members(task, "router")}
        return {w.name: routers[w.index] for w in self.layout.members(task, "worker")}

    def _archives(self, task: str) -> dict[str, str]:
        """Each agent of a task, and the directory its archive is sealed into in this run."""
        pd = ProfileDir.of(self.p)
        return {
            agent: str(pd.archive_dir(agent, self.p.run_id))
            for agent in (contract.agent_id(task, c.index or 0) for c in self.layout.members(task, "worker"))
        }

    def _ready(self, task: str) -> dict[str, str]:
        """Each worker whose router the wake step waits for, and where that router answers."""
        routers = {c.index: c for c in self.layout.members(task, "router")}
        return {
            w.name: ready_url(self.p, routers[w.index])
            for w in self.layout.members(task, "worker")
            if spec(self.p, routers[w.index]).ready_at_wake
        }

    def _cleanroom(self, task: str) -> si.CleanroomCopy:
        return si.CleanroomCopy(
            image=self.p.cleanroom_image(task),
            container=contract.cleanroom_copy_name(self.p.profile, task),
            labels=self.p.labels(contract.CLEANROOM_COPY_ROLE, task),
        )

    def _gitea(self, task: str) -> dict[str, str]:
        return {
            "gitea_url": operator_url(self.p, "gitea"),
            "gitea_user": contract.ADMIN_USER,
            "repo": contract.team_repo(task),
            "gitea_repositories": str(ProfileDir.of(self.p).gitea_repositories),
        }

    def _team_task(self, task: str, after: list[Any]) -> Step:
        """Seed -> routers and workers -> kickoff -> export -> shutdown; returns the shutdown step."""
        name, p, secrets = self.name, self.p, self.secrets
        slug = contract.task_slug(task)
        archives = dict(zip((c.name for c in self.layout.members(task, "worker")), self._archives(task).values()))
        gitea_password = {"AGENSH_GITEA_PASSWORD": secrets["gitea_admin_password"]}
        mattermost = {"AGENSH_MATTERMOST_PASSWORD": secrets["mattermost_admin_password"]}
        base = {"run_dir": self.run_dir, "task_id": task}
        chat = {**base, "mattermost_url": operator_url(p, "mattermost"), "mattermost_user": contract.ADMIN_USER}
        seed = Step(
            f"{name}-{slug}",
            steps.SEED,
            si.SeedInputs(
                **base,
                **self._gitea(task),
                cleanroom=self._cleanroom(task),
                archive_dirs=list(archives.values()),
            ),
            self.opts(*after),
            secrets=gitea_password,
            env=self.docker_env,
        )
        team = Team(f"{name}-{slug}", self.layout, task, self.declare, [seed], self.opts())
        self.teams.append(team)
        swarm = self.swarm is not None
        wake = Step(
            f"{name}-{slug}",
            steps.WAKE,
            si.WakeInputs(
                **base,
                workers=dict(zip(archives, p.task_budget.worker_offsets)),
                services=swarm,
                ready=self._ready(task),
                routers={} if swarm else self._routers(task),
            ),
            self.opts(team),
            env=self.docker_env,
        )
        kickoff = Step(
            f"{name}-{slug}",
            steps.KICKOFF,
            si.KickoffInputs(
                **chat,
                prompt=str(self.checkout / KICKOFF.path),
                budget_s=p.task_budget.budget_s,
                kickoff_s=p.task_budget.kickoff_s,
                workers=dict(zip(archives, self._archives(task))),
                copilot_version=p.copilot_version,
                services=swarm,
                convention=p.checkout_convention,
            ),
            self.opts(wake),
            secrets=mattermost,
            env=self.docker_env,
        )
        export = Step(
            f"{name}-{slug}",
            steps.EXPORT,
            si.ExportInputs(**base, **self._gitea(task), profile=p.profile, grace_s=p.export_grace_s),
            self.opts(kickoff),
            secrets=gitea_password,
        )
        reminders = Step(
            f"{name}-{slug}",
            steps.REMINDERS,
            si.RemindersInputs(**chat, minutes=p.reminder_minutes),
            self.opts(kickoff),
            secrets=mattermost,
        )
        nudges = Step(
            f"{name}-{slug}",
            steps.NUDGES,
            si.NudgesInputs(
                **chat,
                workers=dict(zip(archives, self._archives(task))),
                idle_nudge_s=p.idle_nudge_s,
                idle_check_s=p.idle_check_s,
                services=swarm,
                platform=[] if swarm else self._platform_containers(),
                routers={} if swarm else self._routers(task),
                convention=p.checkout_convention,
            ),
            self.opts(kickoff),
            secrets=mattermost,
            env=self.docker_env,
        )
        return Step(
            f"{name}-{slug}",
            steps.SHUTDOWN,
            si.ShutdownInputs(
                **base,
                grace_s=p.export_grace_s,
                workers=archives,
                routers=[c.name for c in self.layout.members(task, "router")],
                services=swarm,
                convention=p.checkout_convention,
            ),
            self.opts(export, reminders, nudges),
            env=self.docker_env,
            late={"collect": self.swarm.archives(task)} if self.swarm else None,
        )

    def _baseline_task(self, task: str, after: list[Any]) -> Step:
        """Seed the host workspace -> worker and snapshot sidecar -> stop at the deadline (archive, commit the rest,
        export); returns the stop step, whose receipt is the task's shutdown receipt."""
        name, p = self.name, self.p
        slug = contract.task_slug(task)
        pd = ProfileDir.of(p)
        (worker,), (sidecar,) = self.layout.members(task, "worker"), self.layout.members(task, "snapshot")
        archive = str(pd.archive_dir(contract.agent_id(task, 1), p.run_id))
        base = {
            "run_dir": self.run_dir,
            "task_id": task,
            "workspace": str(pd.workspace),
            "worker_image": p.worker_image(task),
        }
        seed = Step(
            f"{name}-{slug}",
            steps.BASELINE_SEED,
            si.BaselineSeedInputs(
                **base,
                cleanroom=self._cleanroom(task),
                budget_s=p.task_budget.budget_s,
                archive_dirs=[archive],
                provenance={
                    "profile": p.model_dump(mode="json"),
                    "profile_digest": p.digest(),
                    "worker_image": p.worker_image(task),
                    "cleanroom_image": p.cleanroom_image(task),
                },
            ),
            self.opts(*after),
        )
        team = Team(f"{name}-{slug}", self.layout, task, self.declare, [seed], self.opts())
        self.teams.append(team)
        return Step(
            f"{name}-{slug}",
            steps.BASELINE_STOP,
            si.BaselineStopInputs(
                **base,
                worker=worker.name,
                sidecar=sidecar.name,
                archive_dir=archive,
                grace_s=p.export_grace_s,
                convention=p.checkout_convention,
            ),
            self.opts(team),
        )


def pair(p: Profile, record: pulumi.Input[dict[str, Any]]) -> pulumi.Output[dict[str, Any]]:
    """This baseline's score beside the team stack's score for the same task (when both exist)."""
    team = pulumi.StackReference(f"organization/{pulumi.get_project()}/{p.pair_with}")
    return pulumi.Output.all(mine=record, theirs=team.get_output("provenance")).apply(
        lambda r: {
            task: {
                "baseline": (r["mine"] or {}).get("scores", {}).get(task, {}).get("score"),
                "team": ((r["theirs"] or {}).get("scores") or {}).get(task, {}).get("score"),
                "team_stack": p.pair_with,
            }
            for task in p.tasks
        }
    )
