"""`astra db`: the instance's databases (schema versions; moving to PostgreSQL)."""

from __future__ import annotations

from typing import Any

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


@db.command()
@click.option("--to", "to_url", required=True, help="The PostgreSQL to move to: postgresql://… (an empty database).")
@pass_state
def copy(state: State, to_url: str) -> None:
    """Copy this data directory's SQLite records to PostgreSQL and build every base's index there.

    Nothing of the source is changed: afterwards, serve with --database (or ASTRALYX_DATABASE_URL).
    """
    from ..config import Settings
    from ..db_copy import copy_instance
    from ..engines import is_postgres

    if not is_postgres(to_url):
        raise click.BadParameter("expected postgresql://…", param_hint="--to")
    home = Settings.load(state.home).home
    bars: dict[str, Any] = {}

    def progress(what: str, done: int, total: int) -> None:
        bar = bars.get(what)
        if bar is None:
            label = "Copying records" if what == "records" else "Building indexes"
            bar = bars[what] = click.progressbar(length=total, label=label)
            bar.__enter__()
        bar.update(done - bar.pos)
        if done >= total:
            bar.__exit__(None, None, None)

    from ..db_copy import safe_url
    from ..errors import AstralyxError

    try:
        report = copy_instance(home, to_url, progress)
    except AstralyxError as e:
        raise click.ClickException(f"{e.message} ({e.code})") from e
    rows = sum(report["records"].values())
    click.echo(f"Copied {rows} records and built {len(report['indexes'])} base indexes "
               f"({sum(report['indexes'].values())} documents).")
    click.echo(f"Serve it with: astra serve --database {safe_url(to_url)}")


COMMANDS = [db]
