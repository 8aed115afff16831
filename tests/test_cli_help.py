"""Every `astra` command and option says what it does (`--help`), as sqlite-utils checks for its own."""

from __future__ import annotations

import click
import pytest
from click.testing import CliRunner

from astralyx.cli import cli


def commands(group: click.Group, path: tuple[str, ...] = ()):
    for name, command in sorted(group.commands.items()):
        yield (*path, name), command
        if isinstance(command, click.Group):
            yield from commands(command, (*path, name))


ALL = list(commands(cli))


@pytest.mark.parametrize(("path", "command"), ALL, ids=[" ".join(p) for p, _ in ALL])
def test_every_command_has_help(path, command):
    assert (command.help or "").strip(), f"astra {' '.join(path)} has no help text"
    undocumented = [p.opts[0] for p in command.params if isinstance(p, click.Option) and not (p.help or "").strip()]
    assert not undocumented, f"astra {' '.join(path)}: options without help: {undocumented}"
    result = CliRunner().invoke(cli, [*path, "--help"], prog_name="astra")
    assert result.exit_code == 0 and "Usage: astra " + " ".join(path) in result.output, result.output


def test_there_are_commands_to_check():
    assert len(ALL) > 25
