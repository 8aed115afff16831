"""`astra metis memory`, `astra metis forget`, `astra metis edit` end to end, on a local data directory."""

from __future__ import annotations

import json

import pytest

from astralyx.auth.actor import Actor
from astralyx.config import Settings
from astralyx.core import Astralyx


@pytest.fixture
def kept(astra, home):
    astra("metis", "create", "team", "--kind", "memory")
    core = Astralyx(Settings.load(home)).start()
    try:
        ana = {"subject": "Ana", "attribute": "role"}
        out = core.memory.keep(Actor.local_owner("default"), "team", [
            {**ana, "fact": "Ana leads the data team.", "source": "chat: reorg", "said_at": "2026-09-01"},
            {**ana, "fact": "Ana works in research.", "source": "chat: standup", "said_at": "2026-10-12"},
            {"subject": "Bruno", "attribute": "city", "fact": "Bruno lives in Recife.", "said_at": "2026-10-01T08:30:00Z"},
        ]).model_dump()
    finally:
        core.close()
    return [f["id"] for f in out["facts"]]


def test_memory_lists_current_facts_and_history(astra, kept):
    old, new, bruno = kept
    out = astra("metis", "memory", "team").output
    assert "Ana" in out and "role  Ana works in research.  (2026-10-12, chat: standup)" in out and new in out
    assert "Bruno lives in Recife.  (2026-10-01 08:30, by hand)" in out
    assert "leads the data team" not in out and "2 fact(s)" in out
    out = astra("metis", "memory", "team", "--history").output
    assert f"was: Ana leads the data team.  (2026-09-01 – 2026-10-12, chat: reorg)  {old}" in out
    assert "1 in the history" in out
    data = json.loads(astra("metis", "memory", "team", "--as-of", "2026-09-15", "--json").output)
    assert [f["fact"] for g in data["subjects"] for f in g["facts"]] == ["Ana leads the data team."]


def test_edit_and_forget(astra, kept, home):
    old, new, bruno = kept
    out = astra("metis", "edit", "team", new, "--fact", "Ana works in the research group.").output
    assert f"corrected {new}: Ana works in the research group." in out
    assert "was: Ana leads the data team." in astra("metis", "memory", "team", "--history").output
    out = astra("metis", "forget", "team", new, "--history").output
    assert f"forgot {new} and 1 older fact(s) it replaced" in out
    out = astra("metis", "memory", "team", "--history").output
    assert "Ana" not in out and "Bruno" in out
    assert "forgot" in astra("metis", "forget", "team", bruno).output
    assert "(no facts)" in astra("metis", "memory", "team").output
    assert not list((home / "bases/default/team/notes/memory").rglob("f_*.md"))


def test_forget_without_history_says_what_holds_again(astra, kept):
    old, new, bruno = kept
    out = astra("metis", "forget", "team", new).output
    assert f"forgot {new}" in out and "now current again: Ana leads the data team." in out


def test_errors_are_one_line(astra, kept):
    bad = astra("metis", "edit", "team", "f_0123456789abcdef", "--fact", "x", ok=False)
    assert bad.exit_code == 1 and "FACT_NOT_FOUND" in bad.output
    secret = astra("metis", "edit", "team", kept[1], "--fact", "My password is hunter2.", ok=False)
    assert secret.exit_code == 1 and "FACT_SENSITIVE" in secret.output and "hunter2" not in secret.output
    astra("metis", "create", "handbook")
    docs = astra("metis", "memory", "handbook", ok=False)
    assert docs.exit_code == 1 and "NOT_A_MEMORY" in docs.output


def test_a_fact_said_again_is_recorded_and_shown(astra, kept):
    out = astra("metis", "remember", "team", "--subject", "Bruno", "--attribute", "city",
                "--fact", "Bruno lives in Recife.", "--said", "2026-11-20").output
    assert "known already (1 said again on another date: recorded)" in out, out
    out = astra("metis", "memory", "team").output
    assert "Bruno lives in Recife.  (2026-10-01 08:30, said again 2026-11-20, by hand)" in out


def test_one_fact_by_hand_is_called_the_fact(astra, kept):
    secret = astra("metis", "remember", "team", "--subject", "Ana", "--attribute", "wifi password",
                   "--fact", "It is sunflower42.", ok=False)
    assert secret.exit_code == 1 and "The fact looks like a password (in its fact)" in secret.output
    assert "facts[0]" not in secret.output and "sunflower42" not in secret.output
    bad = astra("metis", "remember", "team", "--subject", "Ana", "--attribute", "role", "--fact", "x" * 5000, ok=False)
    assert bad.exit_code == 1 and "The fact is not valid" in bad.output and "facts[0]" not in bad.output
