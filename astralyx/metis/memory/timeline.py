"""The replacement rules, as pure functions over the facts of one subject+attribute (a key).

The rule. A key's statements are sorted by when they were said (ties: the one kept later is newer).
Consecutive statements of the same fact (the same `norm_wording`) are one fact, held since its first
saying; its later sayings are recorded on it (`said_again`). The last fact is current; each other
one is history, held until the next different fact was said, and replaced by it. So a memory is a
function of the set of statements kept, whatever the order and batches they arrived in: an old
message takes its place in the timeline, and a fact that lands between two sayings of another one
splits it in two (Acme 03-01 and 03-20, then Globex 03-10: Acme until 03-10, Globex until 03-20,
Acme again since 03-20).

Each fact is one note: its first saying is `said_at` (with `kept_at`, which breaks ties), its later
sayings `said_again`. `settle` flattens a key's notes back into statements, adds the new ones, and
builds the notes again; a note keeps its id as long as its first saying (or, for a fact moved earlier
by an older restatement, any saying of it) is in the fact. What Edit corrected (`corrected`) goes with
the sayings: a fact made of several notes keeps the corrections of each.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from ...util import new_id
from .facts import Fact, moment

NEW, REPLACES, OLDER, KNOWN, CONFIRMS = "new", "replaces", "older", "known", "confirms"


def norm_name(name: str) -> str:
    """Subjects and attributes are compared without case and extra spaces."""
    return " ".join(name.split()).casefold()


def key_of(fact: Fact) -> tuple[str, str]:
    return norm_name(fact.subject), norm_name(fact.attribute)


def norm_wording(sentence: str) -> str:
    """The same fact again: same wording ignoring case, spaces and final punctuation."""
    return re.sub(r"[\s.!?;:,…。]+$", "", " ".join(sentence.split()).casefold())


def order(fact: Fact) -> tuple[datetime, datetime, str]:
    return moment(fact.said_at), moment(fact.kept_at), fact.id


@dataclass(frozen=True)
class _Saying:
    at: datetime
    stamp: str  # said_at as written
    note: Fact  # the note it was read from (or the new fact)
    first: bool  # the note's first saying (said_at), not one of its said_again


def _sayings(note: Fact) -> list[_Saying]:
    first = _Saying(moment(note.said_at), note.said_at, note, True)
    again = sorted((_Saying(moment(s), s, note, False) for s in note.said_again), key=lambda s: (s.at, s.stamp))
    return [first, *again]


def _later(stamp: str) -> str:
    return (moment(stamp) + timedelta(microseconds=1)).isoformat(timespec="microseconds").replace("+00:00", "Z")


def settle(
    notes: Iterable[Fact], new: Iterable[Fact] = (), make_id: Callable[[], str] = lambda: new_id("f")
) -> tuple[list[Fact], dict[str, str]]:
    """The arranged notes of one key from its notes plus new facts (kept later than all of them).

    Returns the notes in timeline order (the last current, the others history with until and
    replaced_by) and, for each note and new fact given, the id of the note its first saying is in.
    """
    existing = sorted(notes, key=order)
    incoming = list(new)
    sayings = [s for note in existing for s in _sayings(note)] + [s for f in incoming for s in _sayings(f)]
    # Stable: equal moments keep the order above (the notes' own order, the new facts last = kept later).
    sayings.sort(key=lambda s: s.at)
    runs: list[list[_Saying]] = []
    wording = None
    for s in sayings:
        this = norm_wording(s.note.fact)
        if runs and this == wording:
            runs[-1].append(s)  # the same saying twice is one: said_again below lists each moment once
        else:
            runs.append([s])
            wording = this
    new_ids = {f.id for f in incoming}
    # Per fact: the note it goes on (None: a new note from `head.note`), then its fields.
    built: list[tuple[Fact | None, _Saying, dict[str, Any]]] = []
    where: dict[str, str] = {}
    for run in runs:
        firsts = [s.note for s in run if s.first]
        # Ids stay: an existing note's first saying before a new fact's.
        chosen = next((n for n in firsts if n.id not in new_ids), None) or (firsts[0] if firsts else None)
        head = run[0]
        seen = {head.at}
        again = []
        for s in run[1:]:
            if s.at not in seen:
                seen.add(s.at)
                again.append(s.stamp)
        # The later part of a fact split by one said in between has no first saying: a note of its own.
        fields: dict[str, Any] = {"id": chosen.id if chosen else make_id(), "said_at": head.stamp, "said_again": tuple(again),
                  "kept_at": head.note.kept_at}
        notes = {s.note.id: s.note for s in run}.values()
        fields["corrected"] = tuple(sorted(dict.fromkeys(c for n in notes for c in n.corrected), key=lambda c: c.on))
        # Equal first sayings are told apart by kept_at: keep that order the timeline's.
        if built:
            prev = built[-1][2]
            if head.at == built[-1][1].at and (moment(fields["kept_at"]), fields["id"]) <= (
                moment(prev["kept_at"]), prev["id"]
            ):
                fields["kept_at"] = _later(prev["kept_at"])
        for n in firsts:
            where[n.id] = fields["id"]
        built.append((chosen, head, fields))
    arranged = []
    for i, (chosen, head, fields) in enumerate(built):
        last = i == len(built) - 1
        fields["status"] = "current" if last else "history"
        fields["until"] = None if last else built[i + 1][2]["said_at"]
        fields["replaced_by"] = None if last else built[i + 1][2]["id"]
        arranged.append((chosen or head.note).with_(**fields))
    return arranged, where


def arrange(facts: list[Fact]) -> list[Fact]:
    """The timeline of one key: its facts as the rule arranges them (see the module's docstring)."""
    return settle(facts)[0]


@dataclass
class Placement:
    change: str  # new | replaces | older | known | confirms
    current: Fact | None  # the fact that holds now for the key (before this one)
    known: Fact | None = None  # known: the fact it repeats; confirms: that fact with this saying
    timeline: list[Fact] | None = None  # the key's timeline with it (None when known: nothing changes)
    split: Fact | None = None  # older: the fact it fell in the middle of, split in two


def place(timeline: list[Fact], fact: Fact) -> Placement:
    """What `fact` (kept later than every fact of the timeline) would become in this timeline of its key."""
    current = timeline[-1] if timeline else None
    wording, at = norm_wording(fact.fact), moment(fact.said_at)
    for note in timeline:
        if norm_wording(note.fact) == wording and any(s.at == at for s in _sayings(note)):
            return Placement(KNOWN, current, note)  # said then already: nothing changes
    after, where = settle(timeline, [fact])
    home = next(f for f in after if f.id == where[fact.id])
    if home.id != fact.id:
        return Placement(CONFIRMS, current, home, after)
    if current is None:
        return Placement(NEW, None, timeline=after)
    if home is after[-1]:
        return Placement(REPLACES, current, timeline=after)
    ids = {f.id for f in timeline}
    split = next((f for f in timeline for g in after if g.id not in ids | {fact.id}
                  and norm_wording(g.fact) == norm_wording(f.fact) and g.said_at in f.said_again), None)
    return Placement(OLDER, current, timeline=after, split=split)


def held_on(fact: Fact, at: datetime) -> bool:
    """Did the fact hold at that instant (said by then, not yet replaced)?"""
    if moment(fact.said_at) > at:
        return False
    return fact.until is None or moment(fact.until) > at
