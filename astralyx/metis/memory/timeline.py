"""The replacement rules, as pure functions over the facts of one subject+attribute.

A key's timeline is its facts in the order they were said (ties: the one kept later is newer). The
last one is current; every other one is history, held until the next one was said, replaced by it.
So the state of a key depends only on which facts it holds, not on the order they arrived in: an
old message placed in the timeline goes to history at its place and does not overrule a newer one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime

from .facts import Fact, moment

NEW, REPLACES, OLDER, KNOWN = "new", "replaces", "older", "known"


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


def arrange(facts: list[Fact]) -> list[Fact]:
    """The timeline of one key: sorted, the last current, each other held until the next was said."""
    ordered = sorted(facts, key=order)
    out = []
    for i, fact in enumerate(ordered):
        if i == len(ordered) - 1:
            out.append(fact.with_(status="current", until=None, replaced_by=None))
        else:
            nxt = ordered[i + 1]
            out.append(fact.with_(status="history", until=nxt.said_at, replaced_by=nxt.id))
    return out


@dataclass
class Placement:
    change: str  # new | replaces | older | known
    current: Fact | None  # the fact that holds now for the key (before this one)
    known: Fact | None = None  # for known: the fact it repeats


def place(timeline: list[Fact], fact: Fact) -> Placement:
    """What `fact` would become in this (arranged) timeline of its key."""
    if not timeline:
        return Placement(NEW, None)
    current = timeline[-1]
    position = sum(1 for f in timeline if order(f) < order(fact))
    wording = norm_wording(fact.fact)
    # The same fact as the one holding at that moment, or as the next one said: nothing new.
    for neighbour in (timeline[position - 1] if position else None, timeline[position] if position < len(timeline) else None):
        if neighbour is not None and norm_wording(neighbour.fact) == wording:
            return Placement(KNOWN, current, neighbour)
    if position == len(timeline):
        return Placement(REPLACES, current)
    return Placement(OLDER, current)


def held_on(fact: Fact, at: datetime) -> bool:
    """Did the fact hold at that instant (said by then, not yet replaced)?"""
    if moment(fact.said_at) > at:
        return False
    return fact.until is None or moment(fact.until) > at
