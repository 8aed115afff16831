"""A person's names and paths reach the server as typed: `..` is a note path (400 BAD_PATH), never the base."""

from __future__ import annotations

import httpx
import pytest
from click.testing import CliRunner

from astralyx.cli import cli
from astralyx.util import quoted

from .conftest import ADMIN_TOKEN
from .docs_helpers import served

TRAPS = ["..", ".", "a/../b.md", "../handbook.md", "a/./b.md", "%2E%2E"]


def test_quoted_keeps_slashes_between_segments_only_when_asked():
    assert quoted("plans/offsite.md", slashes=True) == "plans/offsite.md"
    assert quoted("plans/offsite.md") == "plans%2Foffsite.md"
    assert quoted("..") == "%2E%2E" and quoted(".") == "%2E"
    assert quoted("a/../b.md", slashes=True) == "a/%2E%2E/b.md"
    assert quoted("q&a #1?.md") == "q%26a%20%231%3F.md"
    assert quoted("%2E%2E") == "%252E%252E"


def seed(astra):
    astra("metis", "create", "handbook")
    astra("metis", "create", "team", "--kind", "memory")
    astra("metis", "note", "handbook", "plans/offsite.md", "--write", "-", input="# Offsite\n\nPorto in March.\n")


def still_there(astra):
    bases = astra("metis", "bases").output
    assert "handbook" in bases and "team" in bases
    assert "Porto in March." in astra("metis", "note", "handbook", "plans/offsite.md").output


@pytest.mark.parametrize("path", TRAPS)
def test_a_dot_path_deletes_nothing_but_is_refused(astra, path):
    seed(astra)
    result = astra("metis", "note", "handbook", path, "--delete", ok=False)
    assert result.exit_code == 1
    assert "(BAD_PATH)" in result.output, result.output
    still_there(astra)


def test_dot_names_everywhere_in_the_cli_address_nothing_else(astra):
    seed(astra)
    deployments, keys = astra("eos", "deployments").output, astra("keys", "list").output
    for args in (
        ["metis", "note", "handbook", "..", "--write", "-"],
        ["metis", "note", "..", "plans/offsite.md", "--delete"],
        ["metis", "delete", "..", "--yes"],
        ["metis", "files", "handbook", "--delete", ".."],
        ["metis", "forget", "team", ".."],
        ["eos", "undeploy", "..", "--yes"],
        ["keys", "revoke", ".."],
    ):
        result = astra(*args, input="# Replaced\n", ok=False)
        assert result.exit_code != 0, args
        assert "Error:" in result.output or "Usage:" in result.output, (args, result.output)
    still_there(astra)
    assert astra("eos", "deployments").output == deployments and astra("keys", "list").output == keys


def test_odd_but_allowed_names_arrive_as_typed(astra):
    seed(astra)
    astra("metis", "note", "handbook", "plans/q&a #1 50%.md", "--write", "-", input="Questions.\n")
    assert "plans/q&a #1 50%.md" in astra("metis", "notes", "handbook").output
    assert "Questions." in astra("metis", "note", "handbook", "plans/q&a #1 50%.md").output
    astra("metis", "note", "handbook", "plans/q&a #1 50%.md", "--delete")
    assert "q&a" not in astra("metis", "notes", "handbook").output


def test_over_a_real_server_too(core, monkeypatch, tmp_path):
    """uvicorn decodes %2E%2E to `..` for the route: the rule that answers is the note path rule."""
    runner = CliRunner()

    def run(*args: str, input: str | None = None):
        return runner.invoke(cli, list(args), input=input, catch_exceptions=False)

    with served(core) as api:
        monkeypatch.setenv("ASTRALYX_API", api)
        monkeypatch.setenv("ASTRALYX_TOKEN", ADMIN_TOKEN)
        monkeypatch.setenv("ASTRALYX_HOME", str(tmp_path / "unused"))
        assert run("metis", "create", "handbook").exit_code == 0
        assert run("metis", "note", "handbook", "a.md", "--write", "-", input="Kept.\n").exit_code == 0
        for path in TRAPS:
            result = run("metis", "note", "handbook", path, "--delete")
            assert result.exit_code == 1 and "(BAD_PATH)" in result.output, (path, result.output)
        assert core.bases.find("default", "handbook") is not None
        assert "Kept." in run("metis", "note", "handbook", "a.md").output


def test_the_server_decodes_encoded_dots_and_slashes_as_path_characters(core):
    """%2E%2E is `..` to the note path rule (BAD_PATH); %2F is a folder separator; never the base."""
    with served(core) as api:
        http = httpx.Client(base_url=api, headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})
        assert http.post("/metis/knowledge-bases", json={"metadata": {"name": "handbook"}}).status_code == 201
        made = http.put("/metis/knowledge-bases/handbook/notes/plans%2Foffsite.md", json={"content": "Porto."})
        assert made.status_code == 201 and made.json()["path"] == "plans/offsite.md"
        for raw in ("%2E%2E", "%2e%2e", "plans/%2E%2E/plans/offsite.md", "%2E%2E%2Fhandbook.md", "%2E"):
            answer = http.delete(f"/metis/knowledge-bases/handbook/notes/{raw}")
            assert answer.status_code == 400 and answer.json()["error"]["code"] == "BAD_PATH", (raw, answer.text)
        assert http.delete("/metis/knowledge-bases/%2E%2E").json()["error"]["code"] == "BASE_NOT_FOUND"
        assert http.get("/metis/knowledge-bases/handbook/notes/plans/offsite.md").json()["content"] == "Porto."
        http.close()


def test_astralyx_api_without_v1_is_the_same_server(core, monkeypatch, tmp_path):
    """`astra serve` prints the console's address; given as ASTRALYX_API, the CLI finds the API under /v1."""
    runner = CliRunner()
    with served(core) as api:
        monkeypatch.setenv("ASTRALYX_API", api.removesuffix("/v1").rstrip("/"))
        monkeypatch.setenv("ASTRALYX_TOKEN", ADMIN_TOKEN)
        monkeypatch.setenv("ASTRALYX_HOME", str(tmp_path / "unused"))
        result = runner.invoke(cli, ["metis", "create", "handbook"], catch_exceptions=False)
        assert result.exit_code == 0, result.output
        assert core.bases.find("default", "handbook") is not None
