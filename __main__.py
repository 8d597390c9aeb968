"""agensh: a team profile as a stack, or as the stacks of its parts (model/parts.py). Reads the profile, builds the
Experiment (the part this stack declares), exports its record."""

import pulumi

from components import sdk
from components.config import load
from components.experiment import Experiment
from model.project import ROOT

sdk.apply()
profile, secrets, part = load(ROOT)
experiment = Experiment("experiment", profile, secrets, project_dir=ROOT, part=part)
for key, value in experiment.outputs.items():
    pulumi.export(key, value)
pulumi.run(sdk.registrations_started)
