"""The keyword sidecar (tantivy) of a large base: FTS5's words, kept in step with adds, replaces
and deletes, rebuilt when stale or foreign; small bases stay on FTS5."""

from __future__ import annotations

import os
import random
import shutil
import sys
import threading

import pytest

from astralyx.metis.jobs import NICE

from .kit import labels, make_base, owner


def keywords(core, name: str, query: str) -> list[str]:
    base = core.bases.get(owner(), name)
    return [h.document for h in core.search.hits(base, query, mode="keywords")[1]]


def sidecar(core, name: str):
    store = core.index.store(core.bases.get(owner(), name))
    return store, store.keywords


@pytest.fixture
def team(core):
    core.index.keywords_from = 0  # used whatever the size of the base
    make_base(core, "team")
    core.notes.write(owner(), "team", "notes", "trains.md", "# Travel\n\nTrains are booked in second class.")
    core.notes.write(owner(), "team", "notes", "leave.md", "# Leave\n\n## Vacation\n\nEach person has 25 vacation days.")
    core.notes.write(owner(), "team", "notes", "cafe.md", "# Café\n\nThe café serves crêpes on Fridays.")
    return core


def test_small_bases_stay_on_fts5_and_nothing_is_built(core, tmp_path):
    assert core.index.keywords_from == 10_000  # on by default, from 10,000 passages
    make_base(core, "plain")
    core.notes.write(owner(), "plain", "notes", "leave.md", "# Leave\n\nEach person has 25 vacation days.")
    store, side = sidecar(core, "plain")
    assert labels(core.search.search(owner(), "plain", "vacation"))[0] == "notes:plain/leave.md"
    assert side.answered == 0 and side.builds == 0 and not store.keywords.path.exists()

    core.index.keywords_from = 5  # passages
    core.index.close(core.bases.get(owner(), "plain"))
    store, side = sidecar(core, "plain")
    assert labels(core.search.search(owner(), "plain", "vacation"))[0] == "notes:plain/leave.md"
    assert side.answered == 0 and side.builds == 0  # one passage is fewer than 5: FTS5 answers
    for i in range(5):
        core.notes.write(owner(), "plain", "notes", f"n{i}.md", f"# N{i}\n\nNote {i} about parking.")
    assert labels(core.search.search(owner(), "plain", "vacation"))[0] == "notes:plain/leave.md"
    assert side.answered == 1 and side.builds == 1 and store.keywords.path.is_dir()

    core.index.keywords_from = None  # never: FTS5 always
    core.index.close(core.bases.get(owner(), "plain"))
    store, side = sidecar(core, "plain")
    assert labels(core.search.search(owner(), "plain", "vacation"))[0] == "notes:plain/leave.md"
    assert side.answered == 0


def test_long_passages_come_in_fts5s_order(core):
    """tantivy keeps a passage's length in one byte (exact to 40 terms); its best passages are
    scored again from their exact terms and lengths, so the order is FTS5's bm25() order."""
    core.index.keywords_from = 0
    make_base(core, "long")
    rng = random.Random(12)
    words = "river bridge castle forest garden harbour market meadow mountain orchard tower valley village".split()
    filler = "alpha beta gamma delta epsilon zeta theta kappa lambda sigma omega".split()
    for i, length in enumerate(rng.sample(range(45, 260), 40)):  # each passage a length of its own
        text = " ".join(rng.choice(words) if rng.random() < 0.05 else rng.choice(filler) for _ in range(length))
        core.notes.write(owner(), "long", "notes", f"n{i:02}.md", f"# Note {i}\n\n{text}")
    store, side = sidecar(core, "long")
    queries = ["river", "castle garden", "harbour market tower", "meadow valley village orchard", "bridge forest river"]
    for query in queries:
        core.index.exact = True
        exact = keywords(core, "long", query)
        core.index.exact = False
        assert keywords(core, "long", query) == exact and len(exact) >= 10
    assert side.answered == len(queries)


def test_the_sidecar_finds_what_fts5_finds(team):
    store, side = sidecar(team, "team")
    for query in ["booking a train", "vacation days", "cafe crepes", "Leave", "second class travel"]:
        team.index.exact = True
        exact = keywords(team, "team", query)
        team.index.exact = False
        assert keywords(team, "team", query)[:1] == exact[:1] and exact
    assert side.answered == 5
    assert keywords(team, "team", "zebra") == []


def test_the_sidecar_follows_adds_replaces_and_deletes(team):
    store, side = sidecar(team, "team")
    assert keywords(team, "team", "train")[0] == "notes:team/trains.md"
    built = side.builds
    team.notes.write(owner(), "team", "notes", "trains.md", "# Travel\n\nFlights are booked in economy.")
    assert keywords(team, "team", "train") == []
    assert keywords(team, "team", "flight economy") == ["notes:team/trains.md"]
    team.notes.write(owner(), "team", "notes", "zeppelin.md", "# Zeppelin\n\nA zeppelin trip.")
    assert keywords(team, "team", "zeppelin") == ["notes:team/zeppelin.md"]
    team.notes.delete(owner(), "team", "notes", "zeppelin.md")
    team.notes.delete(owner(), "team", "notes", "trains.md")
    for query in ["zeppelin trip", "flights economy booked", "travel"]:
        assert keywords(team, "team", query) == []
    assert side.builds == built and side.generation == store.keywords_generation


def test_opened_again_and_written_before_any_search_it_is_loaded_not_rebuilt(team):
    base = team.bases.get(owner(), "team")
    keywords(team, "team", "train")
    team.index.close(base)
    team.notes.write(owner(), "team", "notes", "zeppelin.md", "# Zeppelin\n\nA zeppelin trip.")
    store, side = sidecar(team, "team")
    assert keywords(team, "team", "zeppelin") == ["notes:team/zeppelin.md"]
    assert side.builds == 0 and side.answered == 1


def test_a_stale_sidecar_after_a_crash_is_rebuilt(team):
    base = team.bases.get(owner(), "team")
    store, side = sidecar(team, "team")
    keywords(team, "team", "train")
    team.index.close(base)
    folder = store.keywords.path
    saved = folder.with_name("saved-copy")
    shutil.copytree(folder, saved)
    team.notes.write(owner(), "team", "notes", "zeppelin.md", "# Zeppelin\n\nA zeppelin trip.")
    team.index.close(base)
    shutil.rmtree(folder)
    saved.rename(folder)  # the sidecar as it was before the last write: a generation behind

    store, side = sidecar(team, "team")
    assert keywords(team, "team", "zeppelin") == ["notes:team/zeppelin.md"]
    assert side.builds == 1 and side.answered == 1


@pytest.mark.parametrize("damage", ["missing", "foreign", "corrupt"])
def test_a_missing_foreign_or_corrupt_sidecar_is_rebuilt(team, damage):
    base = team.bases.get(owner(), "team")
    store, side = sidecar(team, "team")
    before = keywords(team, "team", "vacation train cafe")
    team.index.close(base)
    folder = store.keywords.path
    if damage == "missing":
        shutil.rmtree(folder)
    elif damage == "foreign":  # the sidecar of another base
        make_base(team, "other")
        team.notes.write(owner(), "other", "notes", "x.md", "# X\n\nNothing about trains here at all.")
        other_store, _ = sidecar(team, "other")
        keywords(team, "other", "x")
        team.index.close(team.bases.get(owner(), "other"))
        shutil.rmtree(folder)
        shutil.copytree(other_store.keywords.path, folder)
    else:
        for file in folder.iterdir():
            if file.is_file() and file.suffix in (".idx", ".store", ".term"):
                file.write_bytes(b"\0" * 64)
    store, side = sidecar(team, "team")
    assert keywords(team, "team", "vacation train cafe") == before
    assert side.builds == 1 and side.answered == 1


VOCABULARY = "river bridge castle forest garden harbour market meadow mountain orchard tower valley village".split()
FILLER = "alpha beta gamma delta epsilon zeta theta kappa lambda sigma omega".split()


@pytest.fixture
def unbuilt(core, tmp_path, monkeypatch):
    """A base of 120 passages and a note past `keywords_from` (50) whose sidecar was never built, each build of
    it in the background (as past SYNC_BUILD passages), in steps of 10 passages, reading 32 at a time; a search
    under way is waited for however slow the machine (YIELD_MAX)."""
    from astralyx.metis.index import keywords as module
    from astralyx.metis.index import service

    monkeypatch.setattr(service, "YIELD_MAX", 60.0)
    monkeypatch.setattr(module, "SYNC_BUILD", 0)
    monkeypatch.setattr(module, "BUILD_STEP", 10)
    monkeypatch.setattr(module, "PAGE", 32)
    src = tmp_path / "docs"
    src.mkdir()
    rng = random.Random(29)
    for i in range(120):
        words = (rng.choice(VOCABULARY) if rng.random() < 0.04 else rng.choice(FILLER) for _ in range(rng.randrange(8, 40)))
        (src / f"p{i:03}.md").write_text(f"# Passage {i}\n\n" + " ".join(words) + "\n")
    core.index.keywords_from = None  # nothing built by the sync
    base = make_base(core, "big", sources=[src])
    core.documents.sync(owner(), "big")
    core.notes.write(owner(), "big", "notes", "airship.md", "# Airship\n\nAn airship over the valley.")
    core.index.keywords_from = 50
    core.index.close(base)
    return core


def observed_steps(side) -> tuple[threading.Event, list]:
    """The build's step boundaries, observed: the first one noted in the list returned (with the OS priority
    its thread runs at), then each goes on to the index service's own pause (the searches under way end first)."""
    first, order, pause = threading.Event(), [], side.pause

    def step() -> None:
        if not first.is_set():
            order.append("first step done")
            if sys.platform.startswith("linux"):
                order.append(os.getpriority(os.PRIO_PROCESS, threading.get_native_id()))
            first.set()
        pause()

    side.pause = step
    return first, order


def test_a_first_build_lets_the_searches_under_way_end_between_its_steps(unbuilt):
    """Issue 29, point 13: the first build (seconds of stemming in Python at 10,000 passages) goes in steps,
    and before each the searches under way end, as before each step of a sync. Meanwhile a search is answered
    by FTS5 (the same passages, in its order), never by the half-built sidecar."""
    store, side = sidecar(unbuilt, "big")
    query = "castle harbour meadow"
    unbuilt.index.exact = True
    fts5 = keywords(unbuilt, "big", query)
    unbuilt.index.exact = False
    assert len(fts5) >= 10 and side.builds == 0 and side.answered == 0
    first_step, order = observed_steps(side)
    with unbuilt.index.reading():  # a search under way when the build starts
        side.ensure(store.keywords_generation)  # the first build, in the background, started from this thread
        assert first_step.wait(30)  # a step done: the build waits for the search under way to end,
        found = keywords(unbuilt, "big", query)  # and a search that comes meanwhile is answered
        order.append("search answered")
        assert not side.ready and side.builds == 1
    assert side.wait(30)
    order.append("built")
    if sys.platform.startswith("linux"):  # the build is a sync's work: at the sync jobs' lower priority
        priority = order.pop(1)
        assert priority >= max(NICE, os.getpriority(os.PRIO_PROCESS, threading.get_native_id())), priority
    assert order == ["first step done", "search answered", "built"]
    assert found == fts5 and side.answered == 0  # by FTS5
    assert keywords(unbuilt, "big", query) == fts5 and side.answered == 1  # now by the sidecar, in FTS5's order


@pytest.mark.engines
def test_writes_made_during_a_first_build_are_caught_up_before_it_is_used(unbuilt):
    """Held at its first step (its first page read), the build then reads pages that hold some of the writes
    made meanwhile, and replays them all: the sidecar ends in step, with what FTS5 has."""
    store, side = sidecar(unbuilt, "big")
    first_step, _ = observed_steps(side)
    with unbuilt.index.reading():  # holds the build at its first step
        side.ensure(store.keywords_generation)
        assert first_step.wait(30)
        unbuilt.notes.write(owner(), "big", "notes", "zeppelin.md", "# Zeppelin\n\nA zeppelin over the harbour.")
        unbuilt.notes.write(owner(), "big", "notes", "balloon.md", "# Balloon\n\nA balloon over the castle.")
        unbuilt.notes.delete(owner(), "big", "notes", "balloon.md")
        unbuilt.notes.write(owner(), "big", "notes", "airship.md", "# Airship\n\nA blimp over the valley.")
        assert keywords(unbuilt, "big", "zeppelin") == ["notes:big/zeppelin.md"] and side.answered == 0
    assert side.wait(30)
    assert side.generation == store.keywords_generation and side.builds == 1
    assert keywords(unbuilt, "big", "zeppelin") == ["notes:big/zeppelin.md"]
    assert keywords(unbuilt, "big", "blimp") == ["notes:big/airship.md"]
    assert keywords(unbuilt, "big", "balloon") == [] and keywords(unbuilt, "big", "airship") == ["notes:big/airship.md"]
    assert side.answered == 4  # each by the sidecar


def test_a_base_deleted_during_a_first_build_ends_it_quietly(unbuilt, caplog):
    store, side = sidecar(unbuilt, "big")
    first_step, _ = observed_steps(side)
    folder = unbuilt.bases.get(owner(), "big").folder
    with unbuilt.index.reading():  # holds the build at its first step
        side.ensure(store.keywords_generation)
        assert first_step.wait(30)
        unbuilt.bases.delete(owner(), "big")
    assert not side.wait(30)  # ended at its next step, not built
    assert not folder.exists() and not [r for r in caplog.records if r.levelname == "ERROR"]
