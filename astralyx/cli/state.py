"""What every `astra` command receives: where it works (data directory, workspace) and its API client."""

from __future__ import annotations

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
        return self._client


pass_state = click.make_pass_decorator(State)
