"""`astra`: the root group, its shared options, and error printing."""

from __future__ import annotations

import sys

import click

from .. import __version__
from .client import ApiError
from .state import State


class Group(click.Group):
    """Print API errors as one clear line (and exit 1) instead of a traceback."""

    def invoke(self, ctx: click.Context):
        from ..errors import AstralyxError

        try:
            return super().invoke(ctx)
        except (ApiError, AstralyxError) as e:  # the domain's own: opening the data directory (`astra serve`)
            click.secho(f"Error: {e.message} ({e.code})", fg="red", err=True)
            sys.exit(1)


@click.group(cls=Group)
@click.version_option(__version__, prog_name="astra")
@click.option(
    "--home",
    envvar="ASTRALYX_HOME",
    help="Data directory when working locally (default ~/.astralyx). Ignored when ASTRALYX_API is set.",
)
@click.option(
    "--workspace", "-w", default="default", show_default=True,
    help="Workspace to act in when working locally (a server's key decides it otherwise).",
)
@click.pass_context
def cli(ctx: click.Context, home: str | None, workspace: str) -> None:
    """Astralyx: knowledge bases and memories for your models.

    With ASTRALYX_API (and ASTRALYX_TOKEN) set, commands talk to that server;
    otherwise they work on the local data directory directly.
    """
    ctx.obj = State(home, workspace)


def register() -> None:
    from . import access, db, eos, mcp, metis, serve

    for module in (serve, access, metis, eos, mcp, db):
        for command in module.COMMANDS:
            cli.add_command(command)


register()
