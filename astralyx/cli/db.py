"""`astra db`: the instance's databases (schema versions; moving to PostgreSQL)."""

from __future__ import annotations

import click

from .state import State, pass_state


@click.group()
def db() -> None:
    """The instance's databases: schema versions, moving to PostgreSQL."""


def _open(state: State, database: str | None):
    from ..config import Settings
    from ..core import Astralyx

    return Astralyx(Settings.load(state.home, database_url=database))


@db.command()
@click.option("--database", envvar="ASTRALYX_DATABASE_URL", help="postgresql://… (else the data directory's SQLite files).")
@pass_state
def migrate(state: State, database: str | None) -> None:
    """Bring the records and every base's index to the latest schema version (also done at start)."""
    from ..migrations import migrate_instance

    core = _open(state, database)
    try:
        report = migrate_instance(core)
    finally:
        core.close()
    records = report["records"]
    click.echo(f"records ({report['engine']}): version {records['version']} of {records['latest']}")
    for name, index in report["indexes"].items():
        click.echo(f"index {name}: version {index['version']} of {index['latest']}")


COMMANDS = [db]
