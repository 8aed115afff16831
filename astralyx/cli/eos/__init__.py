"""`astra eos …`: models, deployments, tools and receipts."""

from __future__ import annotations

import click


@click.group()
def eos() -> None:
    """Models and deployments, and the tools their models may call."""


# Each module adds its commands to the group.
from . import deployments, models, receipts, tools  # noqa: E402,F401

COMMANDS = [eos]
