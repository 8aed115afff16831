"""Readable tables for people, JSON for scripts."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

import click
from rich.console import Console
from rich.table import Table
from rich.text import Text

console = Console(soft_wrap=True)
json_option = click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")


def print_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, ensure_ascii=False))


# Columns that hold names and ids: copied into other commands, so never broken across lines.
IDENTIFIERS = {"id", "name", "model", "key", "workspace", "deployment", "base"}


def print_table(rows: Iterable[dict[str, Any]], columns: Sequence[str], headers: Sequence[str] | None = None) -> None:
    cells = [["-" if row.get(c) in (None, "") else str(row.get(c)) for c in columns] for row in rows]
    if not cells:
        click.echo("(none)")
        return
    table = Table(box=None, pad_edge=False, show_edge=False, header_style="bold")
    for i, (column, header) in enumerate(zip(columns, headers or [c.upper() for c in columns], strict=True)):
        if column in IDENTIFIERS or column.endswith("_id"):
            width = max(len(header), *(len(r[i]) for r in cells))
            table.add_column(header, no_wrap=True, min_width=width)
        else:
            table.add_column(header, overflow="fold")
    for row_cells in cells:
        # Text, not markup: "pip install 'astralyx[llama]'" keeps its [llama].
        table.add_row(*[Text(c) for c in row_cells])
    console.print(table)
