"""`astra serve`: run the API (and console) on embedded defaults."""

from __future__ import annotations

import click

from .state import State, pass_state


@click.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on (0.0.0.0: every interface).")
@click.option("--port", default=8000, show_default=True, type=int, help="Port to listen on.")
@click.option("--home", "serve_home", help="Data directory (else ASTRALYX_HOME, else ~/.astralyx).")
@click.option("--edge", is_flag=True, help="Run as an edge gateway: knowledge tools answer as unavailable.")
@click.option(
    "--database", help="PostgreSQL for records and indexes (postgresql://…; else ASTRALYX_DATABASE_URL, config, or SQLite)."
)
@pass_state
def serve(state: State, host: str, port: int, serve_home: str | None, edge: bool, database: str | None) -> None:
    """Serve the REST API under /v1 and the console at /."""
    import uvicorn

    from ..config import Settings
    from ..core import Astralyx
    from ..server import create_app

    settings = Settings.load(serve_home or state.home, edge=edge or None, database_url=database)
    core = Astralyx(settings).start()  # now, to show a new admin key; the app's lifespan finds it started
    if core.new_admin_key:
        click.echo(
            f"Created {core.home} with workspace 'default' and an admin key (shown once; "
            f"also written to {core.home / 'admin.key'}):\n\n  {core.new_admin_key}\n"
        )
    click.echo(f"Astralyx console on http://{host}:{port}/  (sign in with an API key)")
    click.echo(f"Astralyx API on http://{host}:{port}/v1  (data: {core.home})")
    if settings.edge:
        click.echo("Edge gateway: built-in knowledge tools answer as unavailable.")
    # Bases catch up with their files and source folders in the background (a sync job each, its status
    # at GET …/knowledge-bases/<b>/sync); the API answers meanwhile.
    if settings.sync_on_start:
        import threading

        threading.Thread(target=core.sync_all, name="astralyx-sync-at-start", daemon=True).start()
    uvicorn.run(create_app(core), host=host, port=port, log_level="info", proxy_headers=False)


COMMANDS = [serve]
