"""`astra metis …`: knowledge bases, notes, search and memories."""

from __future__ import annotations

import click


@click.group()
def metis() -> None:
    """Knowledge bases: documents, notes and memories of facts."""


# Each module adds its commands to the group.
from . import bases, exchange, memory, notes, remember, search  # noqa: E402,F401

COMMANDS = [metis]
