"""Out-of-order arrivals: a timeline kept in any order ends in the same state."""

from __future__ import annotations

import itertools

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from astralyx.metis.bases import KnowledgeBaseRequest
from astralyx.metis.memory.store import MemoryStore
from astralyx.metis.memory.timeline import norm_wording

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
    request = {"metadata": {"name": f"m{n}"}, "spec": {"kind": "memory"}}
    return core.bases.create(admin, KnowledgeBaseRequest.model_validate(request))


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


# -- restatements: any order and batching of a set of statements gives one memory ------------------

KEYS = [("Ana", "employer"), ("ana ", "Employer"), ("Bruno", "city")]  # the first two: one key
WORDINGS = {
    "ana|employer": ["Ana works at Acme.", "ana works at ACME", "Ana works at Globex.", "Ana works at Initech."],
    "bruno|city": ["Bruno lives in Recife.", "BRUNO LIVES IN RECIFE!", "Bruno lives in Porto."],
}
DAYS = [f"2024-03-{d:02d}" for d in (1, 5, 10, 15, 20, 25)]


def key_name(subject, attribute):
    return f"{subject.strip().lower()}|{attribute.strip().lower()}"


@st.composite
def statements(draw):
    """Up to 9 statements on two keys, a few wordings (case variants too), days that repeat; an order, batches.

    A key is said one thing per day (two different things on one day are ordered by arrival, by the rule).
    """
    raw = draw(st.lists(st.tuples(st.sampled_from(KEYS), st.integers(0, 3), st.sampled_from(DAYS)), min_size=1, max_size=9))
    said: dict[tuple[str, str], str] = {}
    kept = []
    for (subject, attribute), w, day in raw:
        key = key_name(subject, attribute)
        sentence = WORDINGS[key][w % len(WORDINGS[key])]
        if said.setdefault((key, day), norm_wording(sentence)) != norm_wording(sentence):
            continue
        kept.append({"subject": subject, "attribute": attribute, "fact": sentence, "said_at": day, "source": "chat"})
    order = draw(st.permutations(kept))
    cuts = draw(st.lists(st.booleans(), min_size=len(order), max_size=len(order)))
    batches, batch = [], []
    for f, cut in zip(order, cuts, strict=True):
        batch.append(f)
        if cut:
            batches.append(batch)
            batch = []
    if batch:
        batches.append(batch)
    return kept, batches


def by_rule(kept):
    """The rule, written out: per key, sayings by day; consecutive same facts one; each held until the next."""
    sayings: dict[str, set] = {}
    for f in kept:
        sayings.setdefault(key_name(f["subject"], f["attribute"]), set()).add((f["said_at"], norm_wording(f["fact"])))
    timelines = {}
    for key, said in sayings.items():
        runs: list[list] = []
        for day, wording in sorted(said):
            if runs and runs[-1][0] == wording:
                runs[-1][1].append(day)
            else:
                runs.append([wording, [day]])
        timelines[key] = [
            (wording, days[0], tuple(days[1:]), "history" if i < len(runs) - 1 else "current",
             runs[i + 1][1][0] if i < len(runs) - 1 else None,
             (runs[i + 1][0], runs[i + 1][1][0]) if i < len(runs) - 1 else None)
            for i, (wording, days) in enumerate(runs)
        ]
    as_of = {}
    for day in DAYS:
        as_of[day] = sorted(
            (key, t[0]) for key, tl in timelines.items() for t in tl if t[1] <= day and (t[4] is None or t[4] > day)
        )
    return timelines, as_of


def memory(core, admin, base):
    """The memory as the service answers it and as its files say, in the terms of by_rule."""
    listing = core.memory.list(admin, base.name, history=True).model_dump()
    timelines = {}
    for group in listing["subjects"]:
        for item in group["facts"]:
            facts = [*reversed(item.get("replaced", [])), item]
            by_id = {f["id"]: f for f in facts}
            timelines[key_name(group["subject"], item["attribute"])] = [
                (norm_wording(f["fact"]), f["said_at"], tuple(f.get("said_again", [])), f["status"], f.get("until"),
                 (norm_wording(by_id[f["replaced_by"]]["fact"]), by_id[f["replaced_by"]]["said_at"])
                 if f.get("replaced_by") else None)
                for f in facts
            ]
    as_of = {}
    for day in DAYS:
        held = core.memory.list(admin, base.name, as_of=day).model_dump()
        as_of[day] = sorted(
            (key_name(g["subject"], f["attribute"]), norm_wording(f["fact"])) for g in held["subjects"] for f in g["facts"]
        )
    on_disk = {(f.id, f.status, f.said_at, f.said_again, f.until, f.replaced_by) for f in MemoryStore(base.folder).facts()}
    listed = {(f["id"], f["status"], f["said_at"], tuple(f.get("said_again", [])), f.get("until"), f.get("replaced_by"))
              for g in listing["subjects"] for item in g["facts"] for f in [item, *item.get("replaced", [])]}
    assert on_disk == listed  # the files are the truth: each fact one note, in its folder
    return timelines, as_of


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(statements())
def test_any_order_and_batching_of_restatements_gives_the_memory_the_rule_says(core, admin, example):
    kept, batches = example
    base = new_base(core, admin, f"r{len(core.bases.all())}")
    for batch in batches:
        core.memory.keep(admin, base.name, batch)
    assert memory(core, admin, base) == by_rule(kept)
    assert MemoryStore(base.folder).repair() == []  # what was written is what the rule says: nothing to settle
