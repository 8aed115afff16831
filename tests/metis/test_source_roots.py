"""Where a base's folder sources may lie (metis/roots.py): never the data directory, links followed, at create,
update and every sync; under the operator's source_roots for API keys."""

from __future__ import annotations

import os

import pytest

BASES = "/v1/metis/knowledge-bases"


def _base(name: str, *folders) -> dict:
    return {"metadata": {"name": name}, "spec": {"sources": [{"folder": str(f)} for f in folders]}}


def _refused(r, folder=None) -> dict:
    assert r.status_code == 403, r.text
    error = r.json()["error"]
    assert error["code"] == "SOURCE_NOT_ALLOWED" and error["details"]["setting"] == "source_roots"
    if folder is not None:
        assert error["details"]["folder"] == str(folder)
    return error


@pytest.fixture
def roots(monkeypatch, tmp_path):
    """The operator allows folders under tmp_path/allowed (set before the core is built: ask for it first)."""
    allowed = tmp_path / "allowed"
    allowed.mkdir()
    monkeypatch.setenv("ASTRALYX_SOURCE_ROOTS", f"{tmp_path / 'nowhere'}{os.pathsep}{allowed}")
    return allowed


@pytest.fixture
def secrets_of_a(client, home):
    """Workspace default (a) keeps a note in a base and a fact in a memory: what b must never read."""
    assert client.post(BASES, json={"metadata": {"name": "handbook"}}).status_code == 201
    r = client.put(f"{BASES}/handbook/notes/pay.md", json={"content": "# Pay\n\nThe bonus pool is zebracorn 4711.\n"})
    assert r.status_code in (200, 201), r.text
    assert client.post(BASES, json={"metadata": {"name": "team"}, "spec": {"kind": "memory"}}).status_code == 201
    fact = {"subject": "Ana", "attribute": "salary", "fact": "Ana earns zebracorn 90k.", "said_at": "2026-01-05"}
    assert client.post(f"{BASES}/team/memory", json={"facts": [fact]}).status_code == 200
    return home / "bases" / "default"


def test_another_workspace_cannot_take_a_base_folder_as_its_source(roots, client, key_client, secrets_of_a, tmp_path):
    """The issue's attack: b's admin names a's base folders (or the data directory, or a folder holding it) as
    sources: refused, and b has nothing of a's."""
    b = key_client("admin", workspace="b")
    for folder in (secrets_of_a / "handbook", secrets_of_a / "team", secrets_of_a.parent, secrets_of_a.parent.parent,
                   tmp_path):
        error = _refused(b.post(BASES, json=_base("stolen", folder)), folder)
        assert "data directory" in error["message"]
    assert b.get(BASES).json()["knowledge_bases"] == []


@pytest.fixture
def root_above_home(monkeypatch, tmp_path):
    monkeypatch.setenv("ASTRALYX_SOURCE_ROOTS", str(tmp_path))


def test_a_root_above_the_data_directory_still_never_reaches_it(root_above_home, client, key_client, secrets_of_a, tmp_path):
    b = key_client("admin", workspace="b")
    error = _refused(b.post(BASES, json=_base("stolen", secrets_of_a / "team")))
    assert "data directory" in error["message"]
    # the local owner neither: the data directory is never a source
    assert client.post(BASES, json=_base("mine", tmp_path)).status_code == 403  # a folder that holds it
    outside = tmp_path / "docs"
    outside.mkdir()
    (outside / "leave.md").write_text("# Leave\n\nEach person has 25 vacation days.\n")
    assert b.post(BASES, json=_base("docs", outside)).status_code == 201


def test_a_link_into_the_data_directory_is_refused(roots, client, key_client, secrets_of_a):
    link = roots / "handbook-link"
    link.symlink_to(secrets_of_a / "handbook", target_is_directory=True)
    b = key_client("admin", workspace="b")
    error = _refused(b.post(BASES, json=_base("stolen", link)), link)
    assert "data directory" in error["message"]
    # a link inside an allowed root that points outside every root is refused too
    (roots.parent / "elsewhere").mkdir()
    out = roots / "out-link"
    out.symlink_to(roots.parent / "elsewhere", target_is_directory=True)
    error = _refused(b.post(BASES, json=_base("out", out)), out)
    assert "not under a folder this server allows" in error["message"]


def test_a_link_swapped_after_creation_is_refused_at_the_next_sync(roots, client, key_client, secrets_of_a):
    real = roots / "real"
    real.mkdir()
    (real / "leave.md").write_text("# Leave\n\nEach person has 25 vacation days.\n")
    link = roots / "docs"
    link.symlink_to(real, target_is_directory=True)
    b = key_client("admin", workspace="b")
    assert b.post(BASES, json=_base("docs", link)).status_code == 201
    assert b.post(f"{BASES}/docs/sync").status_code == 200
    link.unlink()
    link.symlink_to(secrets_of_a / "handbook", target_is_directory=True)  # swapped: now into a's base
    _refused(b.post(f"{BASES}/docs/sync"), link)
    _refused(b.post(f"{BASES}/docs/reindex"), link)
    found = b.post(f"{BASES}/docs/search", json={"query": "zebracorn bonus pool"}).json()["results"]
    assert not any("zebracorn" in r["text"] for r in found)  # (a hybrid base answers its nearest passages)
    documents = [d["document"] for d in b.get(f"{BASES}/docs/documents").json()["documents"]]
    assert not any("pay" in d for d in documents)


def test_what_a_refused_folder_gave_the_index_goes_at_the_next_sync(roots, key_client, tmp_path):
    """A folder indexed while allowed, refused later (its link now leads outside the roots): the next sync fails
    saying why, and the base no longer serves what that folder gave it."""
    real = roots / "real"
    real.mkdir()
    (real / "leave.md").write_text("# Leave\n\nEach person has 25 vacation days.\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "pay.md").write_text("# Pay\n\nThe bonus pool is zebracorn 4711.\n")
    link = roots / "docs"
    link.symlink_to(real, target_is_directory=True)
    b = key_client("admin", workspace="b")
    assert b.post(BASES, json=_base("docs", link)).status_code == 201
    assert b.post(f"{BASES}/docs/sync").status_code == 200
    assert len(b.get(f"{BASES}/docs/documents").json()["documents"]) == 1
    link.unlink()
    link.symlink_to(outside, target_is_directory=True)
    _refused(b.post(f"{BASES}/docs/sync"), link)
    assert b.get(f"{BASES}/docs/documents").json()["documents"] == []
    found = b.post(f"{BASES}/docs/search", json={"query": "vacation days zebracorn"}).json()["results"]
    assert not any("vacation" in r["text"] or "zebracorn" in r["text"] for r in found)


def test_an_allowed_root_is_accepted_and_synced_and_others_are_not(roots, client, key_client, tmp_path):
    docs = roots / "handbook"
    docs.mkdir()
    (docs / "leave.md").write_text("# Leave\n\nEach person has 25 vacation days.\n")
    editor_admin = key_client("admin", workspace="b")
    assert editor_admin.post(BASES, json=_base("handbook", docs)).status_code == 201
    assert editor_admin.post(f"{BASES}/handbook/sync").status_code == 200
    found = editor_admin.post(f"{BASES}/handbook/search", json={"query": "vacation days"}).json()["results"]
    assert found and "25 vacation days" in found[0]["text"]
    other = tmp_path / "other"
    other.mkdir()
    error = _refused(editor_admin.post(BASES, json=_base("other", other)), other)
    assert "source_roots" in error["message"] and "ASTRALYX_SOURCE_ROOTS" in error["message"]
    # an update that adds it is refused as well; the spec stays as it was
    spec = editor_admin.get(f"{BASES}/handbook").json()["spec"]
    r = editor_admin.put(f"{BASES}/handbook", json={"spec": {**spec, "sources": [*spec["sources"], {"folder": str(other)}]}})
    _refused(r, other)
    assert editor_admin.get(f"{BASES}/handbook").json()["spec"]["sources"] == [{"folder": str(docs)}]
    # the operator's roots bind the local owner too
    _refused(client.post(BASES, json=_base("other", other)), other)


def test_without_roots_keys_name_no_folder_and_the_local_owner_names_any_outside_the_home(
        monkeypatch, tmp_path, astra, key_client, core):
    monkeypatch.delenv("ASTRALYX_SOURCE_ROOTS", raising=False)
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "leave.md").write_text("# Leave\n\nEach person has 25 vacation days.\n")
    admin = key_client("admin")
    error = _refused(admin.post(BASES, json=_base("docs", docs)), docs)
    assert "ASTRALYX_SOURCE_ROOTS" in error["message"]
    # the README's flow: the owner at the machine's own CLI
    astra("metis", "create", "handbook", "--source", str(docs))
    astra("metis", "sync", "handbook")
    assert "25 vacation days" in astra("metis", "search", "handbook", "vacation days").output
    # a key may keep the owner's folder when it changes other things, but not add one
    spec = admin.get(f"{BASES}/handbook").json()["spec"]
    assert admin.put(f"{BASES}/handbook", json={"spec": {**spec, "mcp": {"save": "on_its_own"}}}).status_code == 200
    other = tmp_path / "other"
    other.mkdir()
    r = admin.put(f"{BASES}/handbook", json={"spec": {**spec, "sources": [*spec["sources"], {"folder": str(other)}]}})
    _refused(r, other)
    assert admin.post(f"{BASES}/handbook/sync").status_code == 200
    # even the owner never names the data directory
    refused = astra("metis", "create", "stolen", "--source", str(core.home / "bases"), ok=False)
    assert refused.exit_code != 0 and "SOURCE_NOT_ALLOWED" in refused.output
