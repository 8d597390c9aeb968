"""Workarounds for the pinned Pulumi Python SDKs, in one place, each with its reason and what it saved when measured.

Each was measured on a 128-worker, 5-task preview (1,377 resources) on the 2-core machine (docs/performance.md) with
the versions in `MEASURED_WITH`. When a pin moves (scripts/setup/versions.env), `check()` stops the program until
someone measures each workaround again, keeps or drops it, and updates `MEASURED_WITH` (tests/components/test_sdk.py
checks that it matches the pins).

- `quiet_debug_log`: the SDK sends four debug messages per resource, each a blocking RPC on the event loop's thread,
  shown only with `--debug`. Measured gain: 7 s of a 46 s preview.
- `defer_gc`, `registrations_started`: declaring allocates much and frees almost nothing; the collector walked the
  growing graph again and again, and the SDK rescanned every pending Output while no registration had started.
  Measured gain: half of the declaration's CPU; ~100 s of CPU.
- `Container`: the SDK's `docker.Container` makes an Output and its futures for each of its ~90 properties, set or
  not. Measured gain: about half of the program's CPU.
- `short_stack_traces`: the SDK sends the whole Python stack of every registration, and the engine keeps it in the
  state for the resource's life: ~1.3 KB of a container's ~9.7 KB and of a step's ~5.3 KB, in every checkpoint the
  engine writes (one after each step of an `up`, each the whole state). Only the top frame (the program's line that
  declared the resource, which is also its source position) is sent. Measured gain: the demo's state 290 -> 232 KB
  (a container 9.7 -> 8.4 KB).
- `shared_outputs`: one Output per secret variable, shared by every container that gets it, instead of one per
  container. Measured gain: about a seventh of the program's CPU.
"""

from __future__ import annotations

import asyncio
import functools
import gc
import importlib.metadata
import os
import sys
import traceback
from collections.abc import Callable
from types import FrameType
from typing import TypeVar

import pulumi
import pulumi.log
import pulumi.runtime.resource as sdk_resource
import pulumi_docker as docker
from pulumi.runtime.proto import source_pb2
from pulumi_docker import _utilities as docker_sdk

MEASURED_WITH = {"pulumi": "3.272.0", "pulumi_docker": "5.1.0", "pulumi_command": "1.2.1"}
SDK_DEBUG = "AGENSH_SDK_DEBUG"  # set to 1 to send the SDK's own debug messages again (seen with `pulumi --debug`)
T = TypeVar("T")
A = TypeVar("A")


def check() -> None:
    """Stop when an installed SDK is not the version the workarounds were measured with."""
    found = {name: importlib.metadata.version(name) for name in MEASURED_WITH}
    moved = {name: v for name, v in found.items() if v != MEASURED_WITH[name]}
    if moved:
        raise RuntimeError(
            f"the Pulumi SDKs moved ({', '.join(f'{n} {MEASURED_WITH[n]} -> {v}' for n, v in moved.items())}): "
            "measure each workaround of components/sdk.py again (docs/performance.md), then update MEASURED_WITH"
        )


def apply() -> None:
    """Every workaround that acts on the program as a whole; call once, before anything is declared."""
    check()
    if os.environ.get(SDK_DEBUG) != "1":
        quiet_debug_log()
    short_stack_traces()
    defer_gc()


def quiet_debug_log() -> None:
    pulumi.log.debug = lambda *args, **kwargs: None


def short_stack_traces() -> None:
    """Each registration's stack trace cut to its top frame (the declaring line), found the way the SDK finds it:
    the caller of the third `__init__` up the stack (resource, custom or component resource, the concrete class).
    Walking frames instead of formatting the whole stack also spares the CPU the SDK spent on it."""

    def top_frame() -> source_pb2.StackTrace:
        frame: FrameType | None = sys._getframe(1)
        inits = 0
        while frame is not None:
            if frame.f_code.co_name == "__init__":
                inits += 1
                if inits == 3:
                    break
            frame = frame.f_back
        caller = frame.f_back if frame is not None else None
        if caller is None:
            return source_pb2.StackTrace()
        summary = traceback.FrameSummary(
            caller.f_code.co_filename, caller.f_lineno, caller.f_code.co_name, lookup_line=False
        )
        return source_pb2.StackTrace(
            frames=[source_pb2.StackFrame(pc=sdk_resource._get_source_position_for_frame(summary))]
        )

    sdk_resource._get_stack_trace = top_frame


def defer_gc() -> None:
    """No garbage collection while the program declares (see `registrations_started` for when it resumes)."""
    gc.disable()


async def registrations_started() -> None:
    """Yield once to the event loop so every resource's registration starts before the SDK waits for them.

    The SDK waits for its outstanding RPCs one by one, but only for those already started; when none has started yet
    it falls back to waiting on every pending Output at once, re-scanning all of them each time one resolves. After
    this yield that costs nothing. What the program declared lives until the end: frozen, the garbage collector, on
    again, stops walking it while the registrations resolve.
    """
    gc.freeze()
    gc.enable()
    await asyncio.sleep(0)


class Container(pulumi.CustomResource):
    """A docker.Container registered with only the inputs it is given.

    To the engine, the provider, the state and the policy pack this is the same resource as the SDK's: the same type
    token, provider version and inputs (tests/components/test_containers.py compares them); only the program holds
    fewer Outputs (one per given input, and the id).
    """

    def __init__(
        self,
        resource_name: str,
        args: docker.ContainerArgs,
        opts: pulumi.ResourceOptions,
        *,
        exit_code: bool = False,
    ):
        """`exit_code`: also hold the `exit_code` output (a one-shot container's), declared as the SDK's Container
        declares it: a property set to None, which the SDK never sends as an input."""
        self.reads_exit_code = exit_code
        if exit_code:
            args.__dict__["exit_code"] = None
        super().__init__(
            "docker:index/container:Container",
            resource_name,
            # the stub says a Mapping; the SDK documents (and its own resources pass) an @input_type args object too
            args,  # type: ignore[arg-type]
            pulumi.ResourceOptions.merge(docker_sdk.get_resource_opts_defaults(), opts),
        )

    @property
    @pulumi.getter(name="exitCode")
    def exit_code(self) -> pulumi.Output[int | None]:
        return pulumi.get(self, "exit_code")


def shared_outputs(make: Callable[[str, A], T]) -> Callable[[str, A], T]:
    """`make`, called once per distinct (hashable) argument pair and shared after that."""
    return functools.cache(make)
