"""Where every file of a profile lands: the only module that knows the layout of profile data and run directories.

    <data root>/<profile>/                      ProfileDir: kept by `make down`, removed by destroy
        data/<service>/...                      service data (MySQL, Gitea, Mattermost, board, tokens)
        data/agents/<agent>/shutdown/<run id>/  a worker's sealed HOME and workspace (state.tar.gz)
        data/workspace/                         the baseline worker's workspace repository
        <run id>/                               RunDir: one experiment run
            run_manifest.json, result_index.jsonl, receipts/<step>.json (run-level steps),
            launch.json (when a scheduled launch began), launch.lock (the running launcher),
            launch.log (a detached launch's output), provenance.json, status.json, cc.log (baseline),
            gate.json (calibration gate), report.html
            <task id>/                          submission.tar.gz, <task>.eval.json (untouched original),
                                                <task>.eval.<n>.json (earlier attempts), score.json, evaluate.log,
                                                ramp.json, receipts/<step>.json, result_index.jsonl, RUN_FAILED,
                                                EXPORT_FAILED, DATA_ROOT_FULL, freeze.json (main's HEAD at the
                                                deadline), keeper.lock and keeper.log (the deadline keeper)

    <traj root>/<profile>.<run id>/             CopyDir: the verified copy of a run that destroy leaves alone
        (the run directory's files), agents/<agent>/state.tar.gz, SHA256SUMS.json

Pure paths and small file operations, no Pulumi: components use it for mounts and step inputs, the step
programs for every read and write.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .settings import ProfileSettings

CREATED_MARKER = ".agensh-profile"  # written when a profile's data directory is created; destroy deletes only those
RUN_FAILED = "RUN_FAILED"
EXPORT_FAILED = "EXPORT_FAILED"
DATA_ROOT_FULL = "DATA_ROOT_FULL"  # the data root was full while the team worked: what it could not push is lost
MARKERS = (RUN_FAILED, EXPORT_FAILED, DATA_ROOT_FULL)
LOCK_SUFFIX = ".lock"  # beside a receipt while its step runs


@dataclass(frozen=True)
class ProfileDir:
    path: Path

    @classmethod
    def of(cls, p: ProfileSettings) -> ProfileDir:
        return cls(Path(p.data_root).expanduser() / p.profile)

    def data(self, *parts: str) -> Path:
        return self.path.joinpath("data", *parts)

    @staticmethod
    def holds_data(path: str, profile: str, data_dir: str | None = None) -> bool:
        """Whether a host path lies in a profile's data (`data_dir` exactly when known, else by the layout's shape
        `<data root>/<profile>/data/`), so the policy pack can tell a worker's mounts apart."""
        resolved = str(Path(path)) + "/"
        if data_dir:
            return resolved.startswith(str(Path(data_dir).expanduser()) + "/")
        return f"/{profile}/data/" in resolved

    def run(self, run_id: str) -> RunDir:
        return RunDir(self.path / run_id)

    def archive_dir(self, agent: str, run_id: str) -> Path:
        """Where a worker seals its HOME and workspace at shutdown (`state.tar.gz`)."""
        return self.data("agents", agent, "shutdown", run_id)

    @property
    def gitea_repositories(self) -> Path:
        """Where Gitea keeps its repositories in the profile's data (its `/data`): the export's fallback."""
        return self.data("gitea", "git", "repositories")

    @property
    def workspace(self) -> Path:
        return self.data("workspace")

    @property
    def created_marker(self) -> Path:
        return self.path / CREATED_MARKER

    def claim(self, profile: str, when: str) -> None:
        """Create the profile's directory with the marker that says agensh made it (the first of the profile's data
        step and the launcher to come); ValueError when it holds files agensh did not create."""
        if self.path.is_dir() and any(self.path.iterdir()) and not self.created_marker.exists():
            raise ValueError(f"{self.path} exists and agensh did not create it; choose another data_root or profile")
        self.path.mkdir(parents=True, exist_ok=True)
        if not self.created_marker.exists():
            self.created_marker.write_text(f"agensh profile {profile}, created {when}\n")

    def runs(self) -> list[RunDir]:
        """The run directories present (every child but the service data)."""
        return (
            [RunDir(d) for d in sorted(self.path.iterdir()) if d.is_dir() and d.name != "data"]
            if self.path.is_dir()
            else []
        )

    def run_archives(self, run_id: str) -> dict[str, Path]:
        """Every agent's sealed archive directory of one run, by agent id."""
        return {d.parents[1].name: d for d in sorted(self.data("agents").glob(f"*/shutdown/{run_id}")) if d.is_dir()}


@dataclass(frozen=True)
class CopyDir:
    """The verified copy of one run outside the profile's data (docs/requirements.md R32, 34): the run directory's files
    as they are, and each agent's archive directory under agents/<agent>/."""

    path: Path

    @classmethod
    def of(cls, traj_root: str, profile: str, run_id: str) -> CopyDir:
        return cls(Path(traj_root).expanduser() / f"{profile}.{run_id}")

    def agent(self, agent: str) -> Path:
        return self.path / "agents" / agent

    @property
    def sums(self) -> Path:
        return self.path / "SHA256SUMS.json"


@dataclass(frozen=True)
class RunDir:
    path: Path

    @classmethod
    def of(cls, p: ProfileSettings) -> RunDir:
        return ProfileDir.of(p).run(p.run_id)

    # run level
    @property
    def manifest(self) -> Path:
        return self.path / "run_manifest.json"

    @property
    def index(self) -> Path:
        return self.path / "result_index.jsonl"

    @property
    def launch_record(self) -> Path:
        """Written by a scheduled launch as it begins (scripts/lib/launcher.py), before its preview."""
        return self.path / "launch.json"

    @property
    def launcher(self) -> Path:
        """The running launch's lock, holding its launcher's record (scripts/lib/launcher.py)."""
        return self.path / "launch.lock"

    @property
    def launch_log(self) -> Path:
        """A detached launch's output (`make logs`)."""
        return self.path / "launch.log"

    @property
    def launch_files(self) -> tuple[str, ...]:
        """What a launch writes in the run directory before its preflight checks that the run is new."""
        return self.launch_record.name, self.launcher.name, self.launch_log.name

    @property
    def provenance(self) -> Path:
        return self.path / "provenance.json"

    @property
    def status(self) -> Path:
        return self.path / "status.json"

    @property
    def gate(self) -> Path:
        """The calibration gate's result, when this run was gated (scripts/cli/gate.py)."""
        return self.path / "gate.json"

    @property
    def report(self) -> Path:
        """The run's report page (scripts/lib/report_page.py)."""
        return self.path / "report.html"

    @property
    def activity_log(self) -> Path:
        """The baseline worker's native activity log."""
        return self.path / "cc.log"

    # task level
    def task(self, task_id: str) -> Path:
        return self.path / task_id

    def task_index(self, task_id: str) -> Path:
        return self.task(task_id) / "result_index.jsonl"

    def submission(self, task_id: str) -> Path:
        return self.task(task_id) / "submission.tar.gz"

    def eval_json(self, task_id: str) -> Path:
        """ProgramBench's own result, never changed (`programbench eval RUN` writes it here)."""
        return self.task(task_id) / f"{task_id}.eval.json"

    def earlier_evals(self, task_id: str) -> list[Path]:
        return sorted(self.task(task_id).glob(f"{task_id}.eval.*.json"))

    def eval_attempt(self, task_id: str, n: int) -> Path:
        return self.task(task_id) / f"{task_id}.eval.{n}.json"

    def evaluate_log(self, task_id: str) -> Path:
        return self.task(task_id) / "evaluate.log"

    def score(self, task_id: str) -> Path:
        return self.task(task_id) / "score.json"

    def ramp(self, task_id: str) -> Path:
        """The checkpoint of when the task's ramp started, so a resumed `up` keeps its clock."""
        return self.task(task_id) / "ramp.json"

    def freeze(self, task_id: str) -> Path:
        """`main`'s HEAD as the deadline froze it (scripts/lib/freeze.py): the export exports this commit, never a
        later one."""
        return self.task(task_id) / "freeze.json"

    def keeper_lock(self, task_id: str) -> Path:
        """Held by the task's deadline keeper while it lives, so arming it again starts no second one."""
        return self.task(task_id) / "keeper.lock"

    def keeper_log(self, task_id: str) -> Path:
        return self.task(task_id) / "keeper.log"

    def receipts(self, task_id: str | None = None) -> Path:
        return (self.task(task_id) if task_id else self.path) / "receipts"

    def receipt(self, step: str, task_id: str | None = None) -> Path:
        return self.receipts(task_id) / f"{step}.json"

    def lock(self, step: str, task: str | None = None) -> Path:
        """Held while the step's program runs (scripts/lib/step.py), so `status` can tell a running step."""
        return self.receipt(step, task).with_suffix(LOCK_SUFFIX)

    def receipt_steps(self, task_id: str | None = None) -> list[str]:
        """The steps that left a receipt for the task (or the run)."""
        return sorted(p.stem for p in self.receipts(task_id).glob("*.json"))

    def marker(self, task_id: str | None, name: str) -> Path:
        return (self.task(task_id) if task_id else self.path) / name

    def markers(self, task_id: str) -> list[str]:
        """Failure markers standing against a task (its own, or the run's)."""
        return [m for m in MARKERS if self.marker(task_id, m).exists() or self.marker(None, m).exists()]

    def uncopied(self, path: Path, copier: str) -> bool:
        """What the copy of a run leaves out: locks (a step's, the launcher's), the receipt of the step that makes the
        copy (`copier`: it is written after the copy) and the launch's log, which the launcher writes on after the
        copy and adds to it as it ends (scripts/lib/launcher.py)."""
        return path.suffix == LOCK_SUFFIX or path in (self.receipt(copier), self.launch_log)

    def task_ids(self) -> list[str]:
        """Task directories present (a task appears once a step wrote into it)."""
        return (
            sorted(p.name for p in self.path.iterdir() if p.is_dir() and p.name != "receipts")
            if self.path.is_dir()
            else []
        )
