"""Benchmark: what the file backend's checkpoint costs the engine, in one stack and split into one stack per task.

The engine writes the whole state after every step of an `up`, so a stack's checkpoint bytes grow with the square
of its resources. This bench isolates that cost from Docker and from the program: a throwaway project of N
`command.local.Command`s that run `true`, each carrying a padding input so that a resource weighs about what a
container does in a real state (~9.5 kB at 128 workers, `--kb`; the padding lands at ~9.8 kB). It times `pulumi up`
(and the peak memory of `pulumi`) for `--tasks` x `--per-task` resources in one stack, then for the same resources
as one stack per task updated one after another, as the stack-per-task design would (docs/performance.md). Nothing
but the bench's own throwaway backend is touched; it is removed at the end. Prints figures; asserts nothing.

    .venv/bin/python -m scripts.lab.checkpoint_bench --per-task 264 --tasks 5     # the 128 x 5 shape, ~9 min
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from model.project import ROOT
from scripts.lab.bench import timed_pulumi
from scripts.lab.sandbox import isolated_env, state_file

PROJECT = "ckpt"

PROGRAM = """\
import pulumi
import pulumi_command as command

config = pulumi.Config()
pad = "x" * config.require_int("pad")
for i in range(config.require_int("resources")):
    command.local.Command(f"r{i}", create="true", environment={"PAD": pad})
"""


def up(proj: Path, env: dict[str, str], stack: str, resources: int, pad: int) -> tuple[float, int, int]:
    """Seconds and peak MB of `pulumi up` of a new stack of `resources`, and its checkpoint's bytes."""
    pulumi = ["pulumi", "--non-interactive", "-s", stack]
    timed_pulumi(["pulumi", "--non-interactive", "stack", "init", stack], cwd=proj, env=env)
    timed_pulumi([*pulumi, "config", "set", "resources", str(resources)], cwd=proj, env=env)
    timed_pulumi([*pulumi, "config", "set", "pad", str(pad)], cwd=proj, env=env)
    seconds, mb, _ = timed_pulumi([*pulumi, "up", "--yes", "--skip-preview"], cwd=proj, env=env)
    return seconds, mb, state_file(env, PROJECT, stack).stat().st_size


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--per-task", type=int, default=264, help="resources per task (128 workers: 264)")
    ap.add_argument("--tasks", type=int, default=5)
    ap.add_argument("--kb", type=float, default=9.5, help="state bytes per resource to aim at, in kB")
    args = ap.parse_args(argv)
    # a Command's state holds its environment twice (inputs and outputs) beside ~1.4 kB of its own
    pad = max(0, int((args.kb * 1000 - 1400) / 2))
    with tempfile.TemporaryDirectory(prefix="agensh-ckpt-") as tmp:
        proj = Path(tmp) / "project"
        proj.mkdir()
        (proj / "Pulumi.yaml").write_text(
            f"name: {PROJECT}\nruntime:\n  name: python\n  options:\n    virtualenv: {ROOT / '.venv'}\n"
        )
        (proj / "__main__.py").write_text(PROGRAM)
        env = isolated_env(Path(tmp), "ckpt")
        n, t = args.per_task, args.tasks
        print("layout resources up_s peak_mb state_kb s_per_resource", flush=True)
        t0 = time.monotonic()
        seconds, mb, size = up(proj, env, "one", n * t, pad)
        print(f"one-stack {n * t} {seconds:.1f} {mb} {size // 1000} {seconds / (n * t):.3f}", flush=True)
        total, peak = 0.0, 0
        for k in range(t):
            seconds, mb, size = up(proj, env, f"task{k + 1}", n, pad)
            total, peak = total + seconds, max(peak, mb)
            print(f"  task{k + 1} {n} {seconds:.1f} {mb} {size // 1000} {seconds / n:.3f}", flush=True)
        print(f"per-task {n * t} {total:.1f} {peak} - {total / (n * t):.3f}", flush=True)
        print(f"({time.monotonic() - t0:.0f} s in all; the stacks go with the throwaway backend)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
