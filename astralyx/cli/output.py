"""Readable tables and bars for people, JSON for scripts; each readable at 80 columns."""

from __future__ import annotations

import json
import textwrap
from collections.abc import Iterable, Sequence
from typing import Any

import click
from rich.cells import cell_len
from rich.console import Console
from rich.progress import BarColumn, Progress, ProgressColumn, TextColumn, TimeElapsedColumn
from rich.table import Column, Table
from rich.text import Text

console = Console(soft_wrap=True)
json_option = click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")

GAP = 2  # spaces between two columns of a table
WIDE = 120  # columns from which a progress bar also shows the time elapsed and the document at hand


def print_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, ensure_ascii=False))


# Columns that hold names and ids: copied into other commands, so never broken across lines.
IDENTIFIERS = {"id", "name", "model", "key", "workspace", "deployment", "base"}


def _longest_word(text: str) -> int:
    return max((cell_len(word) for word in text.split()), default=1)


def _fit(natural: list[int], least: list[int], room: int) -> list[int]:
    """Column widths within `room`: each at least `least` (its longest word); the room left makes the
    columns that want least whole first ("82.5 MB" on one line), and the last gets what remains."""
    if sum(natural) <= room:
        return natural
    widths = list(least)
    spare = room - sum(widths)
    for i in sorted(range(len(widths)), key=lambda i: natural[i] - least[i]):
        more = min(natural[i] - widths[i], spare)
        widths[i] += more
        spare -= more
    return widths


def print_table(rows: Iterable[dict[str, Any]], columns: Sequence[str], headers: Sequence[str] | None = None) -> None:
    """A table that never breaks a word: lines wrap between words, and names and ids stay whole. When even
    that does not fit the terminal, each row is printed as a block of `HEADER  value` lines instead."""
    cells = [["-" if row.get(c) in (None, "") else str(row.get(c)) for c in columns] for row in rows]
    if not cells:
        click.echo("(none)")
        return
    heads = list(headers or [c.upper() for c in columns])
    whole = [column in IDENTIFIERS or column.endswith("_id") for column in columns]
    natural = [max(cell_len(heads[i]), *(cell_len(r[i]) for r in cells)) for i in range(len(columns))]
    least = [natural[i] if whole[i] else max(_longest_word(heads[i]), *(_longest_word(r[i]) for r in cells))
             for i in range(len(columns))]
    room = console.width - GAP * (len(columns) - 1)
    if sum(least) > room:
        _blocks(cells, heads)
        return
    table = Table(box=None, pad_edge=False, show_edge=False, header_style="bold")
    for head, width, keep in zip(heads, _fit(natural, least, room), whole, strict=True):
        table.add_column(head, width=width, no_wrap=keep, overflow="fold")
    for row_cells in cells:
        # Text, not markup: "pip install 'astralyx[llama]'" keeps its [llama].
        table.add_row(*[Text(c) for c in row_cells])
    console.print(table)


def _blocks(cells: list[list[str]], heads: list[str]) -> None:
    """Rows too wide for the terminal as a table: one block per row, a line per column."""
    label = max(cell_len(h) for h in heads)
    room = max(console.width - label - GAP, 20)
    indent = " " * (label + GAP)
    for n, row_cells in enumerate(cells):
        if n:
            click.echo()
        for head, value in zip(heads, row_cells, strict=True):
            lines = textwrap.wrap(value, room, break_long_words=False, break_on_hyphens=False) or [value]
            click.echo(click.style(f"{head:<{label}}", bold=True) + " " * GAP + f"\n{indent}".join(lines))


def wrapped(text: str, indent: str = "") -> str:
    """A paragraph wrapped at the terminal's width, words whole."""
    return textwrap.fill(text, max(console.width, 40), subsequent_indent=indent, break_long_words=False,
                         break_on_hyphens=False)


def progress(*counts: str | ProgressColumn) -> Progress:
    """A progress bar that reads whole at 80 columns: the label and the counts (TextColumn templates, e.g.
    "{task.fields[counts]}") are never cut, the bar takes the room left; the time elapsed and the document at
    hand (the task's field `document`) only from WIDE columns. No bar in pipes and logs."""

    def whole(column: str | ProgressColumn) -> ProgressColumn:
        return TextColumn(column, table_column=Column(no_wrap=True)) if isinstance(column, str) else column

    columns: list[ProgressColumn] = [whole("[bold]{task.description}"), BarColumn(bar_width=None), *map(whole, counts)]
    if console.width >= WIDE:
        columns += [TimeElapsedColumn(), TextColumn("{task.fields[document]}", style="dim",
                                                   table_column=Column(no_wrap=True, overflow="ellipsis", max_width=30))]
    return Progress(*columns, console=console, transient=True, disable=not console.is_terminal)
