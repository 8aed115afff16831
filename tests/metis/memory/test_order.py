"""Out-of-order arrivals: a timeline kept in any order ends in the same state."""

from __future__ import annotations

import itertools

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from astralyx.metis.bases import BaseRequest
from astralyx.metis.memory.store import MemoryStore

FIVE = [
    {"subject": "Ana", "attribute": "role", "fact": "Ana is an intern.", "said_at": "2026-01-01"},
    {"subject": "Ana", "attribute": "role", "fact": "Ana is a data analyst.", "said_at": "2026-03-15"},
    {"subject": "ana", "attribute": "Role", "fact": "Ana leads the data team.", "said_at": "2026-06-01T09:00:00Z"},
    {"subject": "Ana", "attribute": "role", "fact": "Ana works in research.", "said_at": "2026-10-12"},
    {"subject": "Ana", "attribute": "role", "fact": "Ana heads research.", "said_at": "2026-11-30T17:45:00+01:00"},
]


def state(core, base):
    """What is on disk, independent of ids: (fact, folder, until, the fact that replaced it)."""
    facts = MemoryStore(base.folder).facts()
    by_id = {f.id: f for f in facts}
    return sorted(
        (f.fact, f.status, f.until, by_id[f.replaced_by].fact if f.replaced_by else None) for f in facts
    )


def new_base(core, admin, n):
    return core.bases.create(admin, BaseRequest.model_validate({"metadata": {"name": f"m{n}"}, "spec": {"kind": "memory"}}))


def test_five_facts_in_every_order_end_in_the_same_state(core, admin):
    states = set()
    for n, order in enumerate(itertools.permutations(FIVE)):
        base = new_base(core, admin, n)
        for f in order:
            core.memory.keep(admin, base.name, [f])
        states.add(tuple(state(core, base)))
    assert len(states) == 1
    (final,) = states
    assert final == tuple(sorted([
        ("Ana heads research.", "current", None, None),
        ("Ana is a data analyst.", "history", "2026-06-01T09:00:00Z", "Ana leads the data team."),
        ("Ana is an intern.", "history", "2026-03-15", "Ana is a data analyst."),
        ("Ana leads the data team.", "history", "2026-10-12", "Ana works in research."),
        ("Ana works in research.", "history", "2026-11-30T16:45:00Z", "Ana heads research."),
    ]))


dates = st.dates(min_value=__import__("datetime").date(2020, 1, 1), max_value=__import__("datetime").date(2030, 12, 31))


@st.composite
def timelines(draw):
    """Five facts on one or two keys, said on distinct days, worded differently; an order; batch splits."""
    days = draw(st.lists(dates, min_size=5, max_size=5, unique=True))
    keys = draw(st.lists(st.sampled_from([("Ana", "role"), ("ANA ", " role"), ("Bruno", "city")]), min_size=5, max_size=5))
    facts = [
        {"subject": s, "attribute": a, "fact": f"Fact number {i} about {s.strip()}.", "said_at": d.isoformat()}
        for i, ((s, a), d) in enumerate(zip(keys, days, strict=True))
    ]
    order = draw(st.permutations(facts))
    cuts = draw(st.lists(st.booleans(), min_size=4, max_size=4))
    batches, batch = [], [order[0]]
    for f, cut in zip(order[1:], cuts, strict=True):
        if cut:
            batches.append(batch)
            batch = []
        batch.append(f)
    batches.append(batch)
    return facts, batches


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(timelines())
def test_any_order_and_batching_equals_the_timeline_sorted(core, admin, example):
    facts, batches = example
    n = len(core.bases.all())
    expected = new_base(core, admin, f"{n}a")
    for f in sorted(facts, key=lambda f: f["said_at"]):
        core.memory.keep(admin, expected.name, [f])
    got = new_base(core, admin, f"{n}b")
    for batch in batches:
        core.memory.keep(admin, got.name, batch)
    assert state(core, got) == state(core, expected)
    current = [s for s in state(core, got) if s[1] == "current"]
    assert len(current) == len({(f["subject"].strip().lower(), f["attribute"].strip()) for f in facts})
