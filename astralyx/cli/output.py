"""Readable tables for people, JSON for scripts."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

import click
from rich.console import Console
from rich.table import Table

console = Console(soft_wrap=True)
json_option = click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")


def print_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, ensure_ascii=False))


def print_table(rows: Iterable[dict[str, Any]], columns: Sequence[str], headers: Sequence[str] | None = None) -> None:
    table = Table(box=None, pad_edge=False, show_edge=False, header_style="bold")
    for header in headers or [c.upper() for c in columns]:
        table.add_column(header, overflow="fold")
    count = 0
    for row in rows:
        table.add_row(*["-" if row.get(c) in (None, "") else str(row.get(c)) for c in columns])
        count += 1
    if count:
        console.print(table)
    else:
        click.echo("(none)")
