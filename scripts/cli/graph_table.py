"""Print the step graph (model/step_graph.py) as a Markdown table: each node, its stack, its program or component,
the runs that have it, what it runs after and what it does.

`--update docs/design.md` rewrites the table between its markers in place (tests/unit/test_step_graph.py checks the
file carries the current one).
"""

from __future__ import annotations

import re

from model import step_graph as g
from model.steps import StepDef
from scripts.cli import options

cli = options.typer_app()

BEGIN = "<!-- the step graph: `python -m scripts.cli steps --update docs/design.md` writes this table -->\n"
END = "<!-- end of the step graph -->\n"
ONLY = {
    "always": "",
    "swarm": "on a swarm",
    "one-host": "on one host",
    "host-units": "unless `host_units: off`",
    "team": "a team",
    "baseline": "a baseline",
    "evaluated": "unless `skip_eval`",
}


class _Every(g.Run):
    """A run with every node, so the table shows each in the graph's order (an arrow's first alternative first)."""

    def has(self, item: g.Item) -> bool:
        return True


def _arrow(text: str) -> str:
    names, task = g.parse(text)
    whose = {"same": "", "previous": " of the previous task", "every": " of every task"}[task]
    return " or ".join(f"`{n}`" for n in names) + whose


def table() -> str:
    rows = [
        "| node | stack | program (or component) | only | runs after | what it does |",
        "|---|---|---|---|---|---|",
    ]
    for i in (i for scope in g.SCOPES for i in g.order(_Every(), scope)):
        what = f"`{i.program}{' ' + i.args if i.args else ''}`" if isinstance(i, StepDef) else f"`{i.by}`"
        runs_after = ", ".join(_arrow(a) for a in i.after) or "—"
        rows.append(f"| `{i.suffix}` | {i.scope} | {what} | {ONLY[i.when]} | {runs_after} | {i.does} |")
    return "\n".join(rows) + "\n"


def with_table(text: str) -> str:
    """A document's text with the current table between its markers."""
    pattern = re.compile(re.escape(BEGIN) + ".*?" + re.escape(END), re.S)
    if not pattern.search(text):
        raise ValueError("the step graph's markers are missing")
    return pattern.sub(lambda _: BEGIN + table() + END, text)


@cli.command()
def command(
    update_path: options.UpdateFile = None,
) -> int:
    if update_path is None:
        print(table(), end="")
    else:
        update_path.write_text(with_table(update_path.read_text()))
    return 0
