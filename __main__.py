"""agensh: one team profile per stack. Reads the profile, builds the Experiment, exports its record."""

import asyncio
from pathlib import Path

import pulumi

from components.config import load
from components.experiment import Experiment

PROJECT = Path(__file__).resolve().parent
profile, secrets = load(PROJECT)
experiment = Experiment("experiment", profile, secrets, project_dir=PROJECT)
for key, value in experiment.outputs.items():
    pulumi.export(key, value)


async def registrations_started() -> None:
    """Yield once to the event loop so every resource's registration starts before the SDK waits for them.

    The SDK (3.272) waits for its outstanding RPCs one by one, but only for those already started; when none has
    started yet it falls back to waiting on every pending Output at once, re-scanning all of them (about 70 per
    container) each time one resolves. At 1,359 resources that rescanning cost ~100 s of CPU in a preview (README,
    "Performance"); after this yield it costs nothing.
    """
    await asyncio.sleep(0)


pulumi.run(registrations_started)
