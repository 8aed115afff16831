"""The keyword sidecar (tantivy) of a large base: FTS5's words, kept in step with adds, replaces
and deletes, rebuilt when stale or foreign; small bases stay on FTS5."""

from __future__ import annotations

import random
import shutil

import pytest

from .test_index import labels, make_base, owner


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
