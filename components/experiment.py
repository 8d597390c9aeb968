"""Experiment: the top-level component of one profile stack.

It declares the step graph of model/step_graph.py (the table in docs/design.md, "The step graph"): the engine's
parts first, then each node of this stack's part in the graph's order, after what the graph says it runs after.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import pulumi
from pydantic import BaseModel

from model import contract, records, step_graph, steps
from model import step_inputs as si
from model.checkout import KICKOFF, revision
from model.parts import WHOLE, Part
from model.profile import Profile
from model.rundir import CopyDir, ProfileDir, RunDir
from model.services import operator_url, ready_url, spec
from model.topology import Layout

from .engine import Engine, EngineArgs, OneHost, engine_of
from .host_units import HostUnits
from .platform import Platform
from .step_resources import Step
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
        self.host_units: HostUnits | None = None
        self.units: list[HostUnits] = []  # the slice and guard every container waits for: this host's, each node's
        self.teams: list[Team] = []
        self.nodes: Step | None = None  # the engine's hosts readied (a swarm's nodes)
        self.run = step_graph.Run.of(p)
        self.made: dict[tuple[str, str | None], list[pulumi.Resource]] = {}  # (node, its task) -> its resources
        self.manifest_inputs = si.ManifestInputs(
            run_dir=self.run_dir,
            project_dir=str(project_dir),
            checkout=str(self.checkout),
            profile=p.model_dump(mode="json"),
            profile_digest=p.digest(),
            attempt=p.eval_attempt,
            copy_dir=self.copy_dir,
            start_at=p.start_at,
        )
        # where the containers run (components/engine.py); a task's stack joins what the platform's stack made
        self.engine: Engine = (
            engine_of(EngineArgs(name, p, layout, secrets, self.checkout, self.revision, self.opts, self))
            if part.platform
            else OneHost.joined(p, layout, secrets)
        )
        self.images, self.declare = self.engine.images, self.engine.declare
        data = self._platform_resources() if part.platform else None
        if not p.run_steps:  # the bare topology: services after the host units, each team after the services
            after: list[pulumi.Resource] = []
            if data is not None:
                ready = self.nodes or data  # on a swarm, its nodes prepared
                self.platform = Platform(f"{name}-platform", layout, self.declare, [ready, *self.units], self.opts())
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
        """The profile's data step, the host units, the engine's hosts readied; returns the data step."""
        name, p = self.name, self.p
        data = Step(name, steps.PROFILE_DATA, self.data_inputs, self.opts())
        if p.host_units != "off":
            key = Path(p.ssh_key_path).expanduser().read_text() if p.ssh_key_path else None
            ssh_key = pulumi.Output.secret(key) if key else None
            self.host_units = HostUnits(f"{name}-host", p, self.opts(), ssh_key)
            self.units = [self.host_units, *self.engine.node_units(ssh_key, self.opts())]
        self.nodes = self.engine.prepare(data, self.opts)
        return data

    def _platform_outputs(self) -> dict[str, Any]:
        assert self.engine.images is not None
        return {
            "networks": {k: str(n) for k, n in self.layout.networks.items()},
            **self.engine.outputs(),
            "ports": self.p.ports,
            "images": self.engine.images.ids,
            "host_units": self.host_units.receipt if self.host_units else "off",
        }

    def opts(self, *deps: Any) -> pulumi.ResourceOptions:
        return pulumi.ResourceOptions(parent=self, depends_on=[d for d in deps if d is not None])

    def _steps(self, data: Step | None) -> pulumi.Output[dict[str, Any]] | None:
        """This stack's part of the step graph (model/step_graph.py), each node in its order after what the graph
        says; returns the provenance record where the part holds it."""
        p, part, run = self.p, self.part, self.run
        build = self._builders()
        if part.platform:
            assert data is not None
            self.made.update(
                {(steps.PROFILE_DATA.suffix, None): [data], (step_graph.HOST_UNITS.suffix, None): list(self.units)}
            )
            self.made.update(
                {
                    (n.suffix, None): [r]
                    for n, r in ((step_graph.NETWORKS, self.engine.networks), (step_graph.IMAGES, self.engine.images))
                    if r
                }
            )
            if self.nodes is not None:
                self.made[(steps.SWARM_NODES.suffix, None)] = [self.nodes]
        elif not pulumi.runtime.is_dry_run():
            self._require_before(part)
        chosen: list[tuple[step_graph.Item, str | None]] = [
            *((i, None) for i in step_graph.order(run, "platform") if part.platform),
            *((i, t) for t in p.tasks if part.declares(t) for i in step_graph.order(run, "task")),
            *((i, None) for i in step_graph.order(run, "record") if part.record),
        ]
        for item, task in chosen:
            if (item.suffix, task) not in self.made:  # the engine's nodes, and those a component made on its way
                made = build[item.suffix](task)
                self.made[(item.suffix, task)] = made if isinstance(made, list) else [made]
        return self._record() if part.record else None

    def _after(self, suffix: str, task: str | None) -> list[pulumi.Resource]:
        """What node `suffix` (of `task`) runs after, as this stack's resources: the graph's arrows into another
        stack are the launch's order instead (model/parts.py)."""
        return [
            r
            for ref in step_graph.after(step_graph.BY_SUFFIX[suffix], self.run)
            for t in step_graph.tasks_of(ref, task, self.p.tasks)
            for r in self.made.get((ref.suffix, t), [])
            if r is not None
        ]

    def _opts(self, suffix: str, task: str | None) -> pulumi.ResourceOptions:
        return self.opts(*self._after(suffix, task))

    def _step(self, step: steps.StepDef, task: str | None, inputs: Any, **kw: Any) -> Step:
        """The step's resource, named for its task, after what the graph says."""
        prefix = f"{self.name}-{contract.task_slug(task)}" if task else self.name
        return Step(prefix, step, inputs, self._opts(step.suffix, task), **kw)

    def _builders(self) -> dict[str, Callable[[str | None], pulumi.Resource | list[pulumi.Resource]]]:
        """How each node of the graph is declared (the engine's nodes are made before the walk)."""
        p = self.p
        per_attempt = {"triggers": [p.eval_attempt]}
        return {
            **{s.suffix: self._task_builder(s) for s in steps.STEPS if s.scope == "task"},
            steps.PREFLIGHT_HOST.suffix: lambda _: self._step(
                steps.PREFLIGHT_HOST,
                None,
                si.preflight_host(p, self.layout, self.checkout, self.revision),
                once_per_run=p.run_id,
                late={"host_units_receipt": self.host_units.receipt} if self.host_units else None,
                env=self.engine.docker_env,
            ),
            steps.MANIFEST_START.suffix: lambda _: self._step(
                steps.MANIFEST_START,
                None,
                self.manifest_inputs,
                once_per_run=p.run_id,
                late={"images": self.engine.image_ids()},
            ),
            step_graph.MODEL_PATH.suffix: lambda _: self._platform(),
            steps.PREFLIGHT_PLATFORM.suffix: lambda _: self._step(
                steps.PREFLIGHT_PLATFORM,
                None,
                si.PreflightPlatformInputs(run_dir=self.run_dir),
                late={"one_shots": self.platform.one_shots()},
            ),
            step_graph.TEAM.suffix: lambda task: self._team(task),
            steps.MANIFEST_FINISH.suffix: lambda _: self._step(
                steps.MANIFEST_FINISH, None, self.manifest_inputs, **per_attempt
            ),
            steps.REPORT.suffix: lambda _: self._step(
                steps.REPORT, None, si.Inputs(run_dir=self.run_dir), **per_attempt
            ),
            # The run's last step, so the first a destroy deletes: its delete refuses while results would be lost.
            steps.PRESERVE_RUN.suffix: lambda _: self._step(
                steps.PRESERVE_RUN,
                None,
                si.PreserveInputs(
                    run_dir=self.run_dir,
                    task_id=None,
                    copy_dir=self.copy_dir,
                    archive_dirs={a: d for t in p.tasks for a, d in self._archives(t).items()},
                    guard=self.data_inputs,
                ),
                **per_attempt,
            ),
        }

    def _task_builder(self, step: steps.StepDef) -> Callable[[str | None], Step]:
        def build(task: str | None) -> Step:
            assert task is not None
            inputs, kw = self._task_step(step, task)
            return self._step(step, task, inputs, **kw)

        return build

    def _platform(self) -> list[pulumi.Resource]:
        """The platform services, the model check declared between the model path and the rest (it is the gate)."""

        def gate(model_path: list[pulumi.Resource]) -> Step:
            self.made[(step_graph.MODEL_PATH.suffix, None)] = model_path
            return self._step(
                steps.PREFLIGHT_MODEL,
                None,
                si.preflight_model(self.p),
                secrets={"AGENSH_PROXY_TOKEN": self.secrets["worker_proxy_token"]},
                once_per_run=self.p.run_id,
            )

        self.platform = Platform(
            f"{self.name}-platform",
            self.layout,
            self.declare,
            self._after(step_graph.MODEL_PATH.suffix, None),
            self.opts(),
            gate=gate,
        )
        assert self.platform.gate is not None
        self.made[(steps.PREFLIGHT_MODEL.suffix, None)] = [self.platform.gate]
        self.made[(step_graph.SERVICES.suffix, None)] = [self.platform]
        return self.made[(step_graph.MODEL_PATH.suffix, None)]

    def _team(self, task: str | None) -> Team:
        assert task is not None
        team = Team(
            f"{self.name}-{contract.task_slug(task)}",
            self.layout,
            task,
            self.declare,
            self._after(step_graph.TEAM.suffix, task),
            self.opts(),
        )
        self.teams.append(team)
        return team

    def _record(self) -> pulumi.Output[dict[str, Any]]:
        """The record of the run: in one stack from the steps' receipts; in the record's stack of a per-task profile,
        the manifest's and the scores' receipts from the run directory (their stacks ran before this one)."""
        p, rd = self.p, RunDir.of(self.p)
        manifest = self.made.get((steps.MANIFEST_START.suffix, None))
        earlier = pulumi.Output.from_input(
            [
                cast(Step, manifest[0]).receipt,
                *(cast(Step, s).receipt for t in p.tasks for s in self.made.get((steps.SCORE.suffix, t), [])),
            ]
            if manifest
            else [
                steps.read_receipt(rd, steps.MANIFEST_START),
                *(() if p.skip_eval else (steps.read_receipt(rd, steps.SCORE, t) for t in p.tasks)),
            ]
        )
        finish = cast(Step, self.made[(steps.MANIFEST_FINISH.suffix, None)][0])
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

    def _require_before(self, part: Part) -> None:
        """A part stack's update refuses before the stacks it follows are done (scripts/cli/launch.py runs them in
        order): it reads the receipts of the steps the graph says it follows (model/step_graph.py: needed_before) in
        the run directory."""
        p, rd = self.p, RunDir.of(self.p)
        needed = [
            (cast(steps.StepDef, ref.item), t)
            for ref in step_graph.needed_before("task" if part.kind == "task" else "record", self.run)
            for t in step_graph.tasks_of(ref, part.task, p.tasks)
        ]
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

    def _task_step(self, step: steps.StepDef, task: str) -> tuple[BaseModel, dict[str, Any]]:
        """A task's step: its inputs, and its resource's secrets, variables and triggers."""
        p, secrets, services, docker_env = self.p, self.secrets, self.engine.services, self.engine.docker_env
        pd = ProfileDir.of(p)
        workers = [c.name for c in self.layout.members(task, "worker")]
        archives = dict(zip(workers, self._archives(task).values()))  # worker name -> its archive directory
        agents = dict(zip(workers, self._archives(task)))  # worker name -> its agent id
        gitea = {"secrets": {"AGENSH_GITEA_PASSWORD": secrets["gitea_admin_password"]}}
        chat = {"secrets": {"AGENSH_MATTERMOST_PASSWORD": secrets["mattermost_admin_password"]}}
        docker = {"env": docker_env}
        per_attempt = {"triggers": [p.eval_attempt]}
        base = {"run_dir": self.run_dir, "task_id": task}
        mattermost = {**base, "mattermost_url": operator_url(p, "mattermost"), "mattermost_user": contract.ADMIN_USER}
        baseline_archive = str(pd.archive_dir(contract.agent_id(task, 1), p.run_id))
        baseline = {**base, "workspace": str(pd.workspace), "worker_image": p.worker_image(task)}
        if step == steps.SEED:
            return si.SeedInputs(
                **base, **self._gitea(task), cleanroom=self._cleanroom(task), archive_dirs=list(archives.values())
            ), {**gitea, **docker}
        if step == steps.WAKE:
            return si.WakeInputs(
                **base,
                workers=dict(zip(archives, p.task_budget.worker_offsets)),
                services=services,
                ready=self._ready(task),
                routers=self.engine.routers(task),
            ), docker
        if step == steps.KICKOFF:
            return si.KickoffInputs(
                **mattermost,
                prompt=str(self.checkout / KICKOFF.path),
                budget_s=p.task_budget.budget_s,
                kickoff_s=p.task_budget.kickoff_s,
                workers=agents,
                copilot_version=p.copilot_version,
                services=services,
                convention=p.checkout_convention,
            ), {**chat, **docker}
        if step == steps.EXPORT:
            return si.ExportInputs(**base, **self._gitea(task), profile=p.profile, grace_s=p.export_grace_s), gitea
        if step == steps.REMINDERS:
            return si.RemindersInputs(**mattermost, minutes=p.reminder_minutes), chat
        if step == steps.NUDGES:
            return si.NudgesInputs(
                **mattermost,
                workers=agents,
                idle_nudge_s=p.idle_nudge_s,
                idle_check_s=p.idle_check_s,
                services=services,
                platform=self.engine.restartable(),
                routers=self.engine.routers(task),
                convention=p.checkout_convention,
            ), {**chat, **docker}
        if step == steps.SHUTDOWN:
            return si.ShutdownInputs(
                **base,
                grace_s=p.export_grace_s,
                workers=archives,
                routers=[c.name for c in self.layout.members(task, "router")],
                services=services,
                convention=p.checkout_convention,
            ), {**docker, "late": {"collect": c} if (c := self.engine.collect(task)) else None}
        if step == steps.BASELINE_SEED:
            return si.BaselineSeedInputs(
                **baseline,
                cleanroom=self._cleanroom(task),
                budget_s=p.task_budget.budget_s,
                archive_dirs=[baseline_archive],
                provenance={
                    "profile": p.model_dump(mode="json"),
                    "profile_digest": p.digest(),
                    "worker_image": p.worker_image(task),
                    "cleanroom_image": p.cleanroom_image(task),
                },
            ), {}
        if step == steps.BASELINE_STOP:
            (worker,), (sidecar,) = self.layout.members(task, "worker"), self.layout.members(task, "snapshot")
            return si.BaselineStopInputs(
                **baseline,
                worker=worker.name,
                sidecar=sidecar.name,
                archive_dir=baseline_archive,
                grace_s=p.export_grace_s,
                convention=p.checkout_convention,
            ), {}
        if step == steps.EVALUATE:
            return si.EvaluateInputs(
                **base,
                docker_cpus=p.eval_docker_cpus,
                pytest_addopts=p.eval_pytest_addopts,
                memory_gib=p.eval_memory_gib,
                docker_org=p.cleanroom_org,
                blob_dir=p.eval_blob_dir,
                profile=p.profile,
                attempt=p.eval_attempt,
            ), {**per_attempt, **docker}
        if step == steps.SCORE:
            return si.ScoreInputs(**base, attempt=p.eval_attempt), per_attempt
        if step == steps.PRESERVE_TASK:
            return si.PreserveInputs(**base, copy_dir=self.copy_dir, archive_dirs=self._archives(task)), per_attempt
        raise ValueError(f"{step.suffix}: a task's step without inputs in components/experiment.py")


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
