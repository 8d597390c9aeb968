"""agensh: one team profile per stack. Reads the profile, builds the Experiment, exports its record."""

from pathlib import Path

import pulumi

from components import sdk
from components.config import load
from components.experiment import Experiment

sdk.apply()
PROJECT = Path(__file__).resolve().parent
profile, secrets = load(PROJECT)
experiment = Experiment("experiment", profile, secrets, project_dir=PROJECT)
for key, value in experiment.outputs.items():
    pulumi.export(key, value)
pulumi.run(sdk.registrations_started)
