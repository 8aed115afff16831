"""`astra metis remember team --from <export>`: list, choose, follow, review, keep; in process, a scripted extractor."""

from __future__ import annotations

import json
import os

import pytest

from .archives_kit import CHATGPT, CLAUDE, chatgpt_conversation, extractor_answer, zipped


@pytest.fixture
def astra(astra, team):
    """The root `astra` (the local data directory of `home`), with the memory `team` made first and its
    extractor answering from the archives' rules."""
    team.reply(extractor_answer, always=True)
    return astra


def kept(client) -> dict[str, dict]:
    memory = client.get("/v1/metis/knowledge-bases/team/memory", params={"history": "true"}).json()
    return {f["fact"]: f for g in memory["subjects"] for f in g["facts"]}


def test_all_and_yes_keep_every_proposal_with_its_period(astra, tmp_path, client, team):
    export = tmp_path / "chatgpt-export.zip"
    export.write_bytes(zipped(CHATGPT, extra={"file-abc.png": b"\x89PNG not sent"}))
    result = astra("metis", "remember", "team", "--from", str(export), "--all", "--yes")
    out = result.output
    assert out.startswith(
        "chatgpt-export.zip: 4 ChatGPT conversation(s)\n"
        "1  2026-03-01  Planning in March  (2 messages)\n"
        "2  2026-05-05  Empty chat  (0 messages)\n"
        "3  2026-06-15  Reunião em São Paulo  (2 messages)\n"
        "4  2026-10-12  Team standup  (2 messages)\n"
        "reading 3 conversation(s) for facts (a small model on a CPU takes a minute or two each)…\n"
        "read 0/3 conversations\n"
    ), out
    assert "Ana\n  role: conversations differ" in out
    assert ("  |  1 new   role: Ana leads the data team.  (2026-03-01, ChatGPT: Planning in March)  "
            "history 2026-03-01 – 2026-10-12\n") in out
    assert ("  |  2 new   role: Ana works in research.  (2026-10-12, ChatGPT: Team standup)  current from 2026-10-12\n") in out
    assert "   3 new   cidade: Bruno mora em Recife.  (2026-06-15, ChatGPT: Reunião em São Paulo)  current from 2026-06-15" in out
    assert "read 3/3 conversations\nAna\n" in out
    assert out.endswith("kept 3; 1 replaced an older fact\n"), out
    facts = kept(client)
    assert set(facts) == {"Ana works in research.", "Bruno mora em Recife."}
    assert [f["fact"] for f in facts["Ana works in research."]["replaced"]] == ["Ana leads the data team."]
    # The image never left the machine: only conversations.json was sent; each chosen conversation read once.
    assert len(team.chat_requests) == 3

    # The same archive again: its job (finished) is reviewed again, everything known, nothing kept twice.
    again = astra("metis", "remember", "team", "--from", str(export), "--all", "--yes")
    assert "continuing the import" in again.output
    assert again.output.endswith("nothing to keep: every fact proposed is known already (--select keeps one anyway)\n")
    assert len(team.chat_requests) == 3


def test_filters_choose_and_the_person_answers(astra, tmp_path, client):
    export = tmp_path / "claude-export.zip"
    export.write_bytes(zipped(CLAUDE))
    result = astra("metis", "remember", "team", "--from", str(export), "--since", "2026-09-10", "--title", "role",
                   input="n\n")
    assert "reading 1 conversation(s)" in result.output
    assert "role: Ana leads the platform team.  (2026-09-20, Claude: Ana's new role)  current from 2026-09-20" in result.output
    assert result.output.endswith("Keep 1 fact(s) in team? [y/N, or numbers] n\nkept nothing (the proposals stay a week: "
                                  "the same command shows them again)\n")
    assert kept(client) == {}


def test_an_interactive_pick_then_numbers(astra, tmp_path, client):
    export = tmp_path / "conversations.json"
    export.write_text(json.dumps(CHATGPT + [chatgpt_conversation("c-l", "Launch", "2026-09-01 10:00",
                                                                  [("user", "The launch moved to Friday.")])]))
    result = astra("metis", "remember", "team", "--from", str(export), input="1,4\n2\n")
    assert "Read which conversations?" in result.output and "reading 2 conversation(s)" in result.output
    assert result.output.endswith("kept 1\n"), result.output
    assert set(kept(client)) == {"The launch is on Friday 16 October."}


def test_json_and_select(astra, tmp_path, client):
    export = tmp_path / "claude.zip"
    export.write_bytes(zipped(CLAUDE))
    result = astra("metis", "remember", "team", "--from", str(export), "--all", "--select", "1", "--json")
    answer = json.loads(result.output)
    assert answer["state"] == "finished" and answer["result"]["kept"] == 1
    assert set(kept(client)) == {"Ana leads the platform team."}
    refused = astra("metis", "remember", "team", "--from", str(export), "--json", ok=False)
    assert refused.exit_code == 2 and "--all, --since, --until or --title" in refused.output


def test_a_hostile_archive_is_refused_here_first(astra, tmp_path, client):
    export = tmp_path / "export.zip"
    export.write_bytes(zipped(CHATGPT, folder="../"))
    result = astra("metis", "remember", "team", "--from", str(export), "--all", ok=False)
    assert result.exit_code == 2 and "ARCHIVE_INVALID" in result.output
    assert kept(client) == {}


def test_the_conversation_forms_of_today_still_work(astra, tmp_path):
    plain = tmp_path / "notes.txt"
    plain.write_text("Ana moved to research this week.")
    result = astra("metis", "remember", "team", "--from", str(plain), "--yes")
    assert "Ana works in research." in result.output and result.output.endswith("kept 1\n")
    refused = astra("metis", "remember", "team", "--from", str(plain), "--all", ok=False)
    assert refused.exit_code == 2 and "ChatGPT or Claude export" in refused.output


def test_an_export_larger_than_an_upload_is_read_here_and_only_its_conversations_sent(astra, tmp_path, client, monkeypatch):
    from astralyx.metis.memory import archives

    monkeypatch.setattr(archives, "MAX_ARCHIVE_BYTES", 50_000)  # 512 MB in truth: the test writes less
    export = tmp_path / "chatgpt-export.zip"
    export.write_bytes(zipped(CHATGPT, extra={"dalle-1.webp": os.urandom(60_000)}))
    assert export.stat().st_size > archives.MAX_ARCHIVE_BYTES
    result = astra("metis", "remember", "team", "--from", str(export), "--title", "standup", "--yes")
    assert result.output.endswith("kept 1\n"), result.output
    assert set(kept(client)) == {"Ana works in research."}
