"""The facts a memory parsed from its files are kept by that core's memory service (not in a dict of the module,
shared by every core and test of the process), bounded, and read again once a file changes."""

from __future__ import annotations

from astralyx.auth.actor import Actor
from astralyx.metis.bases import parse_request
from astralyx.metis.memory.store import MemoryStore, ParsedFacts

OWNER = Actor.local_owner("default")


def fact(subject: str, text: str) -> dict:
    return {"subject": subject, "attribute": "role", "fact": text, "source": "chat: x", "said_at": "2026-09-01"}


def test_each_core_keeps_the_facts_it_parsed_bounded_and_reads_a_changed_one_again(core, other):
    core.bases.create(OWNER, parse_request({"metadata": {"name": "team"}, "spec": {"kind": "memory"}}))
    core.memory.keep(OWNER, "team", [fact(name, f"{name} leads the data team.") for name in ("Ana", "Bo", "Cy")])
    base = core.bases.get(OWNER, "team")
    assert len(core.memory.facts_in(base)) == 3
    assert len(core.memory.parsed) == 3
    assert len(other.memory.parsed) == 0  # another core (a replica in this process) keeps its own
    assert sorted(f.subject for f in other.memory.facts_in(base)) == ["Ana", "Bo", "Cy"]
    assert len(other.memory.parsed) == 3

    bounded = ParsedFacts(limit=2)
    store = MemoryStore(base.folder, parsed=bounded)
    assert len(store.facts()) == 3 and len(bounded) <= 2  # every fact read, no more than two kept

    ana = next(f for f in store.facts() if f.subject == "Ana")
    note = base.folder / ana.relpath
    note.write_text(note.read_text().replace("leads the data team", "joined research"))  # by hand, in place
    assert next(f for f in store.facts() if f.subject == "Ana").fact == "Ana joined research."
