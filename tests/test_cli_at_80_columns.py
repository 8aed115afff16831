"""What `astra` prints at 80 columns: the sync bar whole (label, counts, ETA), tables that never break a word,
the tools note apart from the lines above it, and `remember` by hand saying the fact it kept."""

from __future__ import annotations

import io
import re

import pytest
from rich.console import Console

from astralyx.cli import output
from astralyx.cli.metis import follow
from astralyx.cli.metis.search import _progress

JOB = {"state": "running", "files": {"total": 539, "read": 539, "done": 13}, "passages": {"total": 3016, "done": 65},
       "passages_per_second": 12.3, "eta_seconds": 240, "document": "docs/guide/installation/a-very-long-file-name.md"}


@pytest.fixture
def terminal(monkeypatch):
    """A terminal of a given width (what the bars and tables are drawn on); returns what it shows."""

    def make(width: int) -> Console:
        screen = Console(width=width, file=io.StringIO(), force_terminal=True, color_system=None, soft_wrap=True)
        monkeypatch.setattr(output, "console", screen)
        return screen

    return make


def drawn(screen: Console, bar) -> str:
    screen.print(bar.get_renderable())
    return screen.file.getvalue()


def test_the_sync_bar_keeps_its_label_counts_and_eta_at_80_columns(terminal):
    screen = terminal(80)
    bar = follow._bar()
    what, total, done, counts, rate = follow.describe(JOB)
    bar.add_task(what, total=total, completed=done, counts=counts, rate=rate, document=JOB["document"])
    [line] = drawn(screen, bar).splitlines()
    assert len(line) <= 80 and "…" not in line, line
    assert line.startswith("indexing ")
    assert "passages 65/3,016 · files 13/539" in line and line.endswith("12.3/s, ETA 4m00s")
    # Wider, the time elapsed and the document at hand come too.
    screen = terminal(140)
    bar = follow._bar()
    bar.add_task(what, total=total, completed=done, counts=counts, rate=rate, document="leave.md")
    [line] = drawn(screen, bar).splitlines()
    assert "12.3/s, ETA 4m00s 0:00:00 leave.md" in line and len(line) <= 140, line


def test_the_upload_bar_keeps_its_counts_at_80_columns(terminal):
    screen = terminal(80)
    bar = _progress()
    bar.add_task("uploading", total=12, completed=3, document="leave.pdf")
    [line] = drawn(screen, bar).splitlines()
    assert line.startswith("uploading ") and line.endswith(" 3/12") and len(line) <= 80, line


def test_deployments_never_break_a_word_at_80_columns(astra, client, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    for name, kind in (("multilingual-e5-small-embedding", "embedding"), ("chat", "chat")):
        spec = {"model": name, "kind": kind, "runtime": {"type": "upstream", "url": "http://127.0.0.1:9/v1"}}
        assert client.put(f"/v1/eos/deployments/{name}", json={"spec": spec}).status_code == 200
    out = astra("eos", "deployments", "--no-health").output
    lines = out.splitlines()
    assert all(len(line) <= 80 for line in lines), out
    # Every word whole: each is found on one line (rich once folded "embedding" as "embeddi/ng").
    words = out.split()
    for word in ("embedding", "multilingual-e5-small-embedding", "multilingual-e5-small-int8", "http://127.0.0.1:9/v1",
                 "upstream", "embedded"):
        assert word in words, out
    # Too wide for a table at 80 columns: a block per deployment, a line per column.
    assert "NAME         multilingual-e5-small-embedding" in lines and "KIND         embedding" in lines, out


def test_a_table_that_fits_is_a_table_with_words_whole(astra, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    astra("metis", "create", "handbook")
    astra("metis", "create", "team", "--kind", "memory")
    out = astra("metis", "bases").output
    lines = out.splitlines()
    assert re.match(r"NAME +KIND +EMBEDDING", lines[0]), out
    assert all(len(line) <= 80 for line in lines), out
    assert any(line.startswith("handbook ") and " documents " in line for line in lines), out


def test_the_tools_note_is_a_paragraph_of_its_own(astra, client, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    assert client.post("/v1/metis/knowledge-bases", json={"metadata": {"name": "handbook"}}).status_code == 201
    spec = {"model": "chat", "kind": "chat", "runtime": {"type": "upstream", "url": "http://127.0.0.1:9/v1"}}
    assert client.put("/v1/eos/deployments/chat", json={"spec": spec}).status_code == 200
    out = astra("eos", "tools", "chat", "knowledge", "handbook", "--search", "--save").output
    lines = out.splitlines()
    assert lines[:3] == [
        "chat: search_knowledge searches handbook",
        "chat: save_to_knowledge saves notes to handbook, asking before saving (a draft to save or discard)",
        "",
    ], out
    assert lines[3].startswith("Note: Anyone who may call chat") and all(len(line) <= 80 for line in lines[3:]), out
    assert " ".join(" ".join(lines[3:]).split()).endswith("even without permission to read it.")


def test_remember_by_hand_says_the_fact_it_kept_and_what_it_replaced(astra):
    astra("metis", "create", "team", "--kind", "memory")
    ana = ("metis", "remember", "team", "--subject", "Ana", "--attribute", "role")
    assert astra(*ana, "--fact", "Ana leads the data team.", "--said", "2026-09-01").output == "kept 1\n"
    out = astra(*ana, "--fact", "Ana works in research.", "--said", "2026-10-12").output
    assert out == (
        "new  Ana — role: Ana works in research.  (2026-10-12, by hand)\n"
        "      replaces: Ana leads the data team.\n"
        "kept 1; 1 replaced an older fact\n"
    )
    out = astra(*ana, "--fact", "Ana was an intern.", "--said", "2026-01-05").output
    assert out == (
        "older Ana — role: Ana was an intern.  (2026-01-05, by hand)\n"
        "      older than what holds now: Ana works in research. (2026-10-12)\n"
        "kept 1; 1 went to the history (said before what holds now)\n"
    )
