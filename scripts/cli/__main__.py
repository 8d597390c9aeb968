"""`python -m scripts.cli <command> [args]`: the operator's commands (scripts/cli/app.py)."""

import sys

from scripts.cli.app import main

sys.exit(main())
