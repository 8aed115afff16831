"""What every `astra` command receives: where it works (data directory, workspace) and its API client."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field

import click

from .client import Client


@dataclass
class State:
    home: str | None
    workspace: str
    _client: Client | None = field(default=None, repr=False)

    @property
    def client(self) -> Client:
        """Made on first use: `astra --help` and local-only commands never open the data directory."""
        if self._client is None:
            self._client = Client.from_env(self.home, self.workspace)
            ctx = click.get_current_context(silent=True)
            if ctx is not None:  # closed with the command
                ctx.find_root().call_on_close(self.close)
        return self._client

    def close(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            # Interrupted (Ctrl-C): the process ends now, not after the core's jobs stop (an import's conversation
            # may take minutes; it continues at the next start).
            client.close(keep_core=isinstance(sys.exc_info()[1], KeyboardInterrupt))


pass_state = click.make_pass_decorator(State)
