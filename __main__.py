"""agensh: one team profile per stack. Reads the profile, builds the Experiment, exports its record."""

import asyncio
import gc
import os
from pathlib import Path

import pulumi
import pulumi.log

from components.config import load
from components.experiment import Experiment

SDK_DEBUG = "AGENSH_SDK_DEBUG"  # set to 1 to send the SDK's own debug messages again (seen with `pulumi --debug`)
if os.environ.get(SDK_DEBUG) != "1":
    # The SDK (3.272) sends four debug messages per resource, each a blocking RPC on the event loop's thread, and the
    # engine shows them only with --debug: 7 s of a 128 x 5 preview's 46 (README, "Performance").
    pulumi.log.debug = lambda *args, **kwargs: None

# Declaring allocates much and frees almost nothing: the garbage collector would walk the growing graph again and
# again (half of the declaration's CPU at 128 x 5, while the engine waits for the first registration).
gc.disable()
PROJECT = Path(__file__).resolve().parent
profile, secrets = load(PROJECT)
experiment = Experiment("experiment", profile, secrets, project_dir=PROJECT)
for key, value in experiment.outputs.items():
    pulumi.export(key, value)


async def registrations_started() -> None:
    """Yield once to the event loop so every resource's registration starts before the SDK waits for them.

    The SDK (3.272) waits for its outstanding RPCs one by one, but only for those already started; when none has
    started yet it falls back to waiting on every pending Output at once, re-scanning all of them each time one
    resolves. At 1,359 resources that rescanning cost ~100 s of CPU in a preview (README, "Performance"); after this
    yield it costs nothing. Before it, what the program has declared lives until the end: frozen, the garbage
    collector, on again, stops walking it again and again while the registrations resolve (a quarter of the program's
    CPU).
    """
    gc.freeze()
    gc.enable()
    await asyncio.sleep(0)


pulumi.run(registrations_started)
