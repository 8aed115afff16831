"""Notes: markdown with front matter, versions as ETags, atomic writes, paths confined to the base."""

from __future__ import annotations

import os

import pytest

from astralyx.errors import BadRequest
from astralyx.metis.notes import check_path

pytestmark = pytest.mark.engines  # on SQLite and on PostgreSQL

URL = "/v1/metis/knowledge-bases/handbook/notes"


@pytest.fixture
def base(client):
    assert client.post("/v1/metis/knowledge-bases", json={"metadata": {"name": "handbook"}}).status_code == 201
    return client


def test_create_read_list_replace_delete(base, core):
    note = {"metadata": {"title": "Offsite"}, "content": "# Offsite\n\nPorto in March.\n"}
    created = base.put(f"{URL}/plans/offsite.md", json=note)
    assert created.status_code == 201
    etag = created.headers["etag"]
    file = core.home / "bases/default/handbook/notes/plans/offsite.md"
    assert file.read_text() == '---\ntitle: Offsite\n---\n\n# Offsite\n\nPorto in March.\n'
    read = base.get(f"{URL}/plans/offsite.md")
    assert read.headers["etag"] == etag
    assert read.json()["metadata"] == {"title": "Offsite"} and "Porto" in read.json()["content"]
    raw = base.get(f"{URL}/plans/offsite.md", headers={"accept": "text/markdown"})
    assert raw.text == file.read_text() and raw.headers["etag"] == etag
    assert base.get(URL).json()["notes"] == [
        {"path": "plans/offsite.md", "title": "Offsite", "version": etag.strip('"'), "updated_at": read.json()["updated_at"]}
    ]
    replaced = base.put(f"{URL}/plans/offsite.md", content="Lisbon instead.\n", headers={"content-type": "text/markdown"})
    assert replaced.status_code == 200 and replaced.headers["etag"] != etag
    assert file.read_text() == "Lisbon instead.\n"
    assert base.delete(f"{URL}/plans/offsite.md").json() == {"deleted": "plans/offsite.md"}
    assert not file.exists() and not file.parent.exists()
    assert base.get(f"{URL}/plans/offsite.md").json()["error"]["code"] == "NOTE_NOT_FOUND"


def test_if_match_detects_changes(base):
    first = base.put(f"{URL}/a.md", json={"content": "one"})
    etag = first.headers["etag"]
    base.put(f"{URL}/a.md", json={"content": "someone else"})
    stale = base.put(f"{URL}/a.md", json={"content": "mine"}, headers={"if-match": etag})
    assert stale.status_code == 409 and stale.json()["error"]["code"] == "NOTE_CHANGED"
    assert base.get(f"{URL}/a.md").json()["content"] == "someone else"
    current = base.get(f"{URL}/a.md").headers["etag"]
    assert base.put(f"{URL}/a.md", json={"content": "mine"}, headers={"if-match": current}).status_code == 200
    create_only = base.put(f"{URL}/a.md", json={"content": "x"}, headers={"if-none-match": "*"})
    assert create_only.status_code == 409 and create_only.json()["error"]["code"] == "NOTE_EXISTS"
    delete_stale = base.delete(f"{URL}/a.md", headers={"if-match": etag})
    assert delete_stale.status_code == 409
    assert base.get(f"{URL}/a.md").json()["content"] == "mine"


@pytest.mark.parametrize(
    "path",
    ["../escape.md", "a/../../escape.md", "%2e%2e/escape.md", "..%2Fescape.md", ".hidden.md", "a/.git/x.md",
     "noext", "a%5Cb.md", "con%3Ax.md", "a//b.md", "%20lead.md"],
)
def test_paths_outside_or_odd_are_refused(base, core, path):
    response = base.put(f"{URL}/{path}", json={"content": "x"})
    assert response.status_code in (400, 404), response.text
    if response.status_code == 400:
        assert response.json()["error"]["code"] == "BAD_PATH"
    assert not (core.home / "bases/default/escape.md").exists()
    assert not (core.home / "bases/default/handbook/escape.md").exists()


def test_check_path_rules():
    assert check_path("plans/2026/offsite.md") == "plans/2026/offsite.md"
    assert check_path("Café notes.md") == "Café notes.md"
    for bad in ["/etc/passwd.md", "../x.md", "a/./b.md", "x.txt", "a\\b.md", "a\x00.md", ".md", "C:/x.md"]:
        with pytest.raises(BadRequest):
            check_path(bad)


def test_links_out_of_the_base_are_refused(base, core, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "x.md").write_text("outside")
    notes = core.home / "bases/default/handbook/notes"
    notes.mkdir(parents=True, exist_ok=True)
    os.symlink(outside, notes / "link")
    assert base.get(f"{URL}/link/x.md").json()["error"]["code"] == "BAD_PATH"
    assert base.put(f"{URL}/link/y.md", json={"content": "x"}).json()["error"]["code"] == "BAD_PATH"
    assert not (outside / "y.md").exists()
    assert [n["path"] for n in base.get(URL).json()["notes"]] == []


def test_a_failed_write_leaves_the_old_note_whole(base, core, monkeypatch):
    base.put(f"{URL}/a.md", json={"content": "the original"})
    import astralyx.util as util

    def crash(*args, **kwargs):
        raise OSError("disk on fire")

    # The crash happens after the temp file is written and before the rename.
    monkeypatch.setattr(util.os, "replace", crash)
    with pytest.raises(OSError):
        core.notes.write_in(core.bases.find("default", "handbook"), "notes", "a.md", "x" * 100000)
    monkeypatch.undo()
    folder = core.home / "bases/default/handbook/notes"
    assert (folder / "a.md").read_text() == "the original"
    assert [p.name for p in folder.iterdir()] == ["a.md"]  # no temp file left behind


def test_saved_area_is_separate(base, core):
    base.put("/v1/metis/knowledge-bases/handbook/saved/offsite.md", json={"content": "saved by a model"})
    assert (core.home / "bases/default/handbook/saved/offsite.md").exists()
    assert base.get(URL).json()["notes"] == []
    assert len(base.get("/v1/metis/knowledge-bases/handbook/saved").json()["notes"]) == 1


def test_memory_facts_folder_is_reserved(client):
    client.post("/v1/metis/knowledge-bases", json={"metadata": {"name": "team"}, "spec": {"kind": "memory"}})
    response = client.put("/v1/metis/knowledge-bases/team/notes/memory/f_1.md", json={"content": "x"})
    assert response.status_code == 400 and response.json()["error"]["code"] == "NOTE_RESERVED"
