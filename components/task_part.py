"""TaskPart: one task's nodes of scope `task` (model/step_graph.py): its team (or a baseline's worker and snapshot
sidecar) and the steps from seeding to preserving, each with the inputs built here. Without steps (`run_steps:
false`), only the team, after the platform services."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi
from pydantic import BaseModel

from model import contract, step_graph, steps
from model import step_inputs as si
from model.checkout import KICKOFF
from model.rundir import ProfileDir
from model.services import operator_url, ready_url, spec

from .engine import Engine
from .step_resources import Step
from .team import Team
from .walk import Build, ExperimentPart, PartArgs


@dataclass(frozen=True)
class TaskArgs:
    """A task's part: the experiment's, the engine its containers run on, and the task."""

    part: PartArgs
    engine: Engine
    task: str


class TaskPart(ExperimentPart):
    def __init__(self, name: str, a: TaskArgs, opts: pulumi.ResourceOptions):
        super().__init__("TaskPart", name, a.part, opts)
        self.engine, self.task = a.engine, a.task
        walk = self.a.walk
        if self.a.p.run_steps:
            build: dict[str, Build] = {s.suffix: self._builder(s) for s in steps.STEPS if s.scope == "task"}
            build[step_graph.TEAM.suffix] = lambda _: self._team(walk.after(step_graph.TEAM, a.task))
            walk.declare("task", a.task, build)
        else:  # the bare topology: the team after the platform services
            walk.add(step_graph.TEAM, a.task, [self._team(walk.get(step_graph.SERVICES))])
        self.register_outputs({})

    def _team(self, after: list[pulumi.Resource]) -> Team:
        """The task's routers and workers, each after `after`."""
        a = self.a
        return Team(
            f"{a.name}-{contract.task_slug(self.task)}", a.layout, self.task, self.engine.declare, after, self.opts()
        )

    def _builder(self, step: steps.StepDef) -> Build:
        def build(_: str | None) -> Step:
            inputs, kw = self._inputs(step)
            return self.step(step, self.task, inputs, **kw)

        return build

    def _ready(self) -> dict[str, str]:
        """Each worker whose router the wake step waits for, and where that router answers."""
        layout, p = self.a.layout, self.a.p
        routers = {c.index: c for c in layout.members(self.task, "router")}
        return {
            w.name: ready_url(p, routers[w.index])
            for w in layout.members(self.task, "worker")
            if spec(p, routers[w.index]).ready_at_wake
        }

    def _cleanroom(self) -> si.CleanroomCopy:
        p, task = self.a.p, self.task
        return si.CleanroomCopy(
            image=p.cleanroom_image(task),
            container=contract.cleanroom_copy_name(p.profile, task),
            labels=p.labels(contract.CLEANROOM_COPY_ROLE, task),
        )

    def _gitea(self) -> dict[str, str]:
        return {
            "gitea_url": operator_url(self.a.p, "gitea"),
            "gitea_user": contract.ADMIN_USER,
            "repo": contract.team_repo(self.task),
            "gitea_repositories": str(ProfileDir.of(self.a.p).gitea_repositories),
        }

    def _inputs(self, step: steps.StepDef) -> tuple[BaseModel, dict[str, Any]]:
        """A task's step: its inputs, and its resource's secrets, variables and triggers."""
        a, task, engine = self.a, self.task, self.engine
        p, secrets, docker_env = a.p, a.secrets, engine.docker_env
        pd = ProfileDir.of(p)
        workers = [c.name for c in a.layout.members(task, "worker")]
        archive_dirs = si.archive_dirs(p, a.layout, task)
        archives = dict(zip(workers, archive_dirs.values()))  # worker name -> its archive directory
        agents = dict(zip(workers, archive_dirs))  # worker name -> its agent id
        gitea = {"secrets": {"AGENSH_GITEA_PASSWORD": secrets["gitea_admin_password"]}}
        chat = {"secrets": {"AGENSH_MATTERMOST_PASSWORD": secrets["mattermost_admin_password"]}}
        docker = {"env": docker_env}
        per_attempt = {"triggers": [p.eval_attempt]}
        base = {"run_dir": a.run_dir, "task_id": task}
        mattermost = {**base, "mattermost_url": operator_url(p, "mattermost"), "mattermost_user": contract.ADMIN_USER}
        baseline_archive = str(pd.archive_dir(contract.agent_id(task, 1), p.run_id))
        baseline = {**base, "workspace": str(pd.workspace), "worker_image": p.worker_image(task)}
        if step == steps.SEED:
            return si.SeedInputs(
                **base, **self._gitea(), cleanroom=self._cleanroom(), archive_dirs=list(archives.values())
            ), {**gitea, **docker}
        if step == steps.WAKE:
            return si.WakeInputs(
                **base,
                workers=dict(zip(archives, p.task_budget.worker_offsets)),
                ready=self._ready(),
                routers=engine.routers(task),
            ), docker
        if step == steps.KICKOFF:
            return si.KickoffInputs(
                **mattermost,
                prompt=str(a.checkout / KICKOFF.path),
                budget_s=p.task_budget.budget_s,
                kickoff_s=p.task_budget.kickoff_s,
                workers=agents,
                copilot_version=p.copilot_version,
                convention=p.checkout_convention,
            ), {**chat, **docker}
        if step == steps.EXPORT:
            return si.ExportInputs(
                **base,
                **self._gitea(),
                profile=p.profile,
                grace_s=p.export_grace_s,
                keeper_slice=p.systemd_slice or "",
            ), gitea
        if step == steps.REMINDERS:
            return si.RemindersInputs(**mattermost, minutes=p.reminder_minutes), chat
        if step == steps.NUDGES:
            return si.NudgesInputs(
                **mattermost,
                workers=agents,
                idle_nudge_s=p.idle_nudge_s,
                idle_check_s=p.idle_check_s,
                platform=engine.restartable(),
                routers=engine.routers(task),
                convention=p.checkout_convention,
            ), {**chat, **docker}
        if step == steps.SHUTDOWN:
            return si.ShutdownInputs(
                **base,
                grace_s=p.export_grace_s,
                workers=archives,
                routers=[c.name for c in a.layout.members(task, "router")],
                convention=p.checkout_convention,
            ), {**docker, "late": {"collect": c} if (c := engine.collect(task)) else None}
        if step == steps.BASELINE_SEED:
            return si.BaselineSeedInputs(
                **baseline,
                cleanroom=self._cleanroom(),
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
            (worker,), (sidecar,) = a.layout.members(task, "worker"), a.layout.members(task, "snapshot")
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
            return si.PreserveInputs(**base, copy_dir=si.copy_dir(p), archive_dirs=archive_dirs), per_attempt
        raise ValueError(f"{step.suffix}: a task's step without inputs in components/task_part.py")
