"""Export and import of a base (issue 33, points 4 and 5): an exact round trip into another instance on both engines,
hostile archives refused with their codes and nothing kept, permissions, the CLI, and facts as markdown."""

from __future__ import annotations

import gzip
import io
import json
import os
import tarfile
from collections.abc import Iterator

import pytest
from starlette.testclient import TestClient

from astralyx.auth.actor import Actor
from astralyx.config import Settings
from astralyx.core import Astralyx
from astralyx.eos.catalog import Models
from astralyx.metis.bases import parse_request
from astralyx.server import create_app

from ..conftest import ADMIN_TOKEN

pytestmark = pytest.mark.engines

KB = "/v1/metis/knowledge-bases"


@pytest.fixture
def elsewhere(tmp_path, e5_graphs, database_url, request) -> Iterator[TestClient]:
    """Another instance: its own data directory and its own database (a second PostgreSQL database on that engine)."""
    path = tmp_path / "elsewhere"
    graph = e5_graphs(Models(path).default_embedding().name)
    (path / "models").mkdir(parents=True)
    for file in (graph, graph.with_name(graph.name + ".json")):
        os.link(file, path / "models" / file.name)

    def serve(url: str | None) -> Iterator[TestClient]:
        core = Astralyx(Settings.load(path, database_url=url)).start()
        try:
            with TestClient(create_app(core), headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}) as c:
                c.core = core  # type: ignore[attr-defined]
                yield c
        finally:
            core.close()

    if database_url:
        with request.getfixturevalue("postgres_server").database() as url:
            yield from serve(url)
    else:
        yield from serve(None)


def export(client: TestClient, base: str, fmt: str = "archive") -> bytes:
    r = client.get(f"{KB}/{base}/export", params={"format": fmt})
    assert r.status_code == 200, r.text
    assert r.headers["content-type"] == "application/gzip"
    return r.content


def import_(client: TestClient, data: bytes, name: str | None = None, status: int = 201) -> dict:
    params = {"wait": "true", **({"name": name} if name else {})}
    r = client.post(f"{KB}/import", params=params, content=data, headers={"content-type": "application/gzip"})
    assert r.status_code == status, r.text
    return r.json()


def tar_gz(members: list[tuple[tarfile.TarInfo, bytes | None]]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for info, data in members:
            if data is not None:
                info.size = len(data)
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return buf.getvalue()


def manifest(**changes) -> tuple[tarfile.TarInfo, bytes]:
    data = {"format": "astralyx-base", "format_version": 1, "astralyx_version": "0.1.0", "exported_at": "2026-12-04T00:00:00Z",
            "contents": "base", "knowledge_base": {"name": "hostile", "spec": {"kind": "documents"}}, **changes}
    return tarfile.TarInfo("manifest.json"), json.dumps(data).encode()


def file(name: str, data: bytes = b"# Hello\n\nHi.\n") -> tuple[tarfile.TarInfo, bytes]:
    return tarfile.TarInfo(name), data


def special(name: str, kind: bytes, link: str = "") -> tuple[tarfile.TarInfo, None]:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, link
    return info, None


def seed_documents(client: TestClient, core: Astralyx) -> None:
    assert client.post(KB, json={"metadata": {"name": "handbook"}}).status_code == 201
    for path, text in (("leave.md", "# Leave\n\nEach person has 25 vacation days a year."),
                       ("plans/offsite.md", "# Offsite\n\nThe offsite is in Porto in March."),
                       ("plans/été.md", "# Été\n\nLe bureau ferme deux semaines en août.")):
        assert client.put(f"{KB}/handbook/notes/{path}", json={"metadata": {"title": path}, "content": text}).status_code == 201
    # A second version of a note: the version that travels is the latest.
    r = client.put(f"{KB}/handbook/notes/leave.md", json={"content": "# Leave\n\nEach person has 27 vacation days a year."})
    assert r.status_code == 200
    r = client.post(f"{KB}/handbook/files", files={"file": ("expenses.md", b"# Expenses\n\nReceipts within 30 days.\n")})
    assert r.status_code == 201, r.text
    base = core.bases.find("default", "handbook")
    core.saves.save_now(base, "chat", "Planning the year", "Kickoff", "The kickoff is on 12 January.")
    undone = core.saves.save_now(base, "chat", None, "Scratch", "Nothing to keep.")
    core.saves.undo(Actor.local_owner("default"), "handbook", undone.id)
    core.saves.propose(base, "chat", "Planning", "Draft", "A draft waits for a person.")


def documents_view(client: TestClient) -> dict:
    notes = client.get(f"{KB}/handbook/notes").json()["notes"]
    return {
        "notes": notes,
        "texts": [client.get(f"{KB}/handbook/notes/{n['path']}").json() for n in notes],
        "saved": client.get(f"{KB}/handbook/saved").json(),
        "files": client.get(f"{KB}/handbook/files").json()["files"],
        "model_saves": client.get(f"{KB}/handbook/model-saves").json(),
        "search": [client.post(f"{KB}/handbook/search", json={"query": q}).json()
                   for q in ("vacation days", "Porto offsite", "août", "receipts")],
    }


def test_a_documents_base_moves_exactly_to_another_instance(client, core, elsewhere):
    seed_documents(client, core)
    before = documents_view(client)
    data = export(client, "handbook")
    answer = import_(elsewhere, data)
    assert answer["imported"] == {"files": 1, "notes": 3, "saved": 1, "bytes": answer["imported"]["bytes"], "model_saves": 2}
    assert answer["index"]["state"] == "finished" and answer["warnings"] == []
    assert answer["knowledge_base"]["spec"] == client.get(f"{KB}/handbook").json()["spec"]
    after = documents_view(elsewhere)
    assert after == before
    assert {s["state"] for s in after["model_saves"]["saves"]} == {"as_saved", "undone"}
    # Drafts wait on a person of the first instance: they stay there.
    assert elsewhere.get(f"{KB}/handbook/drafts").json()["drafts"] == []
    # The derived index never travels: the archive holds the manifest, the saves and the base's own files only.
    names = tarfile.open(fileobj=io.BytesIO(data), mode="r:gz").getnames()
    assert names[:2] == ["manifest.json", "model-saves.json"]
    assert sorted(names[2:]) == ["base/files/expenses.md", "base/notes/leave.md", "base/notes/plans/offsite.md",
                                 "base/notes/plans/été.md", "base/saved/kickoff.md"]
    # Undo works on the imported save as on the first.
    save = next(s for s in elsewhere.get(f"{KB}/handbook/model-saves").json()["saves"] if s["state"] == "as_saved")
    assert elsewhere.post(f"{KB}/handbook/model-saves/{save['id']}/undo").status_code == 200


def seed_memory(client: TestClient) -> None:
    assert client.post(KB, json={"metadata": {"name": "team"}, "spec": {"kind": "memory"}}).status_code == 201
    facts = [
        {"subject": "Ana", "attribute": "role", "fact": "Ana leads the data team.", "source": "chat: kickoff",
         "said_at": "2026-03-01"},
        {"subject": "Ana", "attribute": "role", "fact": "Ana works in research.", "source": "chat: standup",
         "said_at": "2026-10-12T10:05:00Z"},
        {"subject": "Ana", "attribute": "role", "fact": "Ana works in research.", "source": "chat: 1:1", "said_at": "2026-11-02"},
        {"subject": "Launch", "attribute": "date", "fact": "The launch is on Friday 16 October.", "source": "chat: standup",
         "said_at": "2026-10-12"},
        {"subject": "Юлия", "attribute": "город", "fact": "Юлия живёт в Казани.", "source": "чат", "said_at": "2026-05-05"},
    ]
    assert client.post(f"{KB}/team/memory", json={"facts": facts}).status_code == 200
    listed = client.get(f"{KB}/team/memory").json()
    launch = next(f for s in listed["subjects"] for f in s["facts"] if s["subject"] == "Launch")
    r = client.put(f"{KB}/team/memory/{launch['id']}", json={"fact": "The launch moved to Friday 23 October."})
    assert r.status_code == 200, r.text


def memory_view(client: TestClient, name: str = "team") -> dict:
    listed = client.get(f"{KB}/{name}/memory", params={"history": "true"}).json()
    listed.pop("knowledge_base")
    searches = [client.post(f"{KB}/{name}/search", json={"query": q}).json()["results"]
                for q in ("What is Ana's role?", "launch date", "Казань")]
    for results in searches:
        for r in results:
            r["document"] = r["document"].replace(f":{name}/", ":team/")
    return {"memory": listed, "search": searches}


def test_a_memory_moves_exactly_with_its_history(client, core, elsewhere):
    seed_memory(client)
    before = memory_view(client)
    assert before["memory"]["history_count"] == 1
    answer = import_(elsewhere, export(client, "team"))
    assert answer["imported"]["facts"] == 3 and answer["imported"]["history"] == 1
    assert memory_view(elsewhere) == before
    # Corrections and sayings again are in it, as they were.
    ana = next(s for s in before["memory"]["subjects"] if s["subject"] == "Ana")["facts"][0]
    assert ana["said_again"] == ["2026-11-02"] and ana["replaced"][0]["until"] == "2026-10-12T10:05:00Z"


def test_import_under_another_name_beside_the_original(client, core):
    seed_documents(client, core)
    # Put there by hand: a file no note can be (said, left out), a link out of the base (never followed).
    folder = core.bases.find("default", "handbook").folder
    (folder / "notes" / "diagram.png").write_bytes(b"\x89PNG")
    (folder / "notes" / "passwd.md").symlink_to("/etc/passwd")
    data = export(client, "handbook")
    names = tarfile.open(fileobj=io.BytesIO(data), mode="r:gz").getnames()
    assert "base/notes/diagram.png" not in names and "base/notes/passwd.md" not in names
    r = client.post(f"{KB}/import", content=data, headers={"content-type": "application/gzip"})
    assert (r.status_code, r.json()["error"]["code"]) == (409, "BASE_EXISTS")
    answer = import_(client, data, name="handbook-copy")
    assert answer["knowledge_base"]["metadata"]["name"] == "handbook-copy"
    (left,) = answer["skipped"]
    assert left["file"] == "notes/diagram.png" and left["why"].startswith("left out at export: ")
    copy = client.get(f"{KB}/handbook-copy/model-saves").json()
    first = client.get(f"{KB}/handbook/model-saves").json()
    # Ids are the instance's: a second copy's saves get their own, and undoing one leaves the other.
    assert {s["id"] for s in copy["saves"]}.isdisjoint({s["id"] for s in first["saves"]})
    assert [s["title"] for s in copy["saves"]] == [s["title"] for s in first["saves"]]
    hits = client.post(f"{KB}/handbook-copy/search", json={"query": "vacation days"}).json()["results"]
    assert hits and hits[0]["document"] == "notes:handbook-copy/leave.md"
    # A multipart form works as the raw body does.
    r = client.post(f"{KB}/import", params={"name": "handbook-form"}, files={"file": ("handbook.tar.gz", data)})
    assert r.status_code == 201, r.text


HOSTILE = [
    ("not gzip", b"PK\x03\x04 this is a zip", "EXPORT_INVALID"),
    ("gzip, not tar", gzip.compress(b"hello " * 1000), "EXPORT_INVALID"),
    ("cut short", None, "EXPORT_INVALID"),
    ("no manifest first", tar_gz([file("base/notes/a.md"), manifest()]), "EXPORT_INVALID"),
    ("newer format", tar_gz([manifest(format_version=99)]), "EXPORT_VERSION"),
    ("another format", tar_gz([manifest(format="something-else")]), "EXPORT_INVALID"),
    ("absolute path", tar_gz([manifest(), file("/etc/cron.d/evil")]), "EXPORT_INVALID"),
    ("dot dot", tar_gz([manifest(), file("base/notes/../../../../evil.md")]), "EXPORT_INVALID"),
    ("dot dot outside", tar_gz([manifest(), file("../evil.md")]), "EXPORT_INVALID"),
    ("symbolic link", tar_gz([manifest(), special("base/notes/a.md", tarfile.SYMTYPE, "/etc/passwd")]), "EXPORT_INVALID"),
    ("hard link", tar_gz([manifest(), special("base/notes/a.md", tarfile.LNKTYPE, "/etc/passwd")]), "EXPORT_INVALID"),
    ("device", tar_gz([manifest(), special("base/files/sda", tarfile.BLKTYPE)]), "EXPORT_INVALID"),
    ("fifo", tar_gz([manifest(), special("base/files/pipe", tarfile.FIFOTYPE)]), "EXPORT_INVALID"),
    ("outside the areas", tar_gz([manifest(), file("base/index.db")]), "EXPORT_INVALID"),
    ("hidden name", tar_gz([manifest(), file("base/notes/.lock.md")]), "EXPORT_INVALID"),
    ("twice", tar_gz([manifest(), file("base/notes/a.md"), file("base/notes/a.md")]), "EXPORT_INVALID"),
    ("file and folder", tar_gz([manifest(), file("base/notes/a.md"), file("base/notes/a.md/b.md")]), "EXPORT_INVALID"),
    ("bad spec", tar_gz([manifest(knowledge_base={"name": "hostile", "spec": {"kind": "nonsense"}})]), "EXPORT_INVALID"),
    ("bad saves", tar_gz([manifest(), file("model-saves.json", b'[{"id": "x"}]')]), "EXPORT_INVALID"),
    ("bad name", tar_gz([manifest(knowledge_base={"name": "../etc", "spec": {}})]), "INVALID_NAME"),
]


@pytest.mark.parametrize("what,data,code", HOSTILE, ids=[h[0] for h in HOSTILE])
def test_a_hostile_or_broken_archive_is_refused_and_nothing_is_kept(client, core, what, data, code):
    if data is None:
        data = tar_gz([manifest(), file("base/notes/a.md", os.urandom(200_000))])[:-5000]
    r = client.post(f"{KB}/import", content=data, headers={"content-type": "application/gzip"})
    assert r.status_code == 422, r.text
    assert r.json()["error"]["code"] == code, r.text
    assert client.get(KB).json()["knowledge_bases"] == []
    assert not any((core.home / "bases" / ".exchange").glob("*"))  # the import's folder went too
    assert not (core.home / "etc").exists() and not (core.home.parent / "evil.md").exists()


def test_an_archive_that_unpacks_to_too_much_is_refused(client, core):
    bomb = tar_gz([manifest(), file("base/files/zeros.txt", b"\0" * 5_000_000)])
    assert len(bomb) < 10_000
    core.exchange.max_unpacked = 1_000_000
    r = client.post(f"{KB}/import", content=bomb, headers={"content-type": "application/gzip"})
    assert (r.status_code, r.json()["error"]["code"]) == (413, "EXPORT_TOO_LARGE")
    core.exchange.max_unpacked, core.exchange.max_members = 10**9, 3
    many = tar_gz([manifest(), *(file(f"base/notes/{i}.md") for i in range(5))])
    r = client.post(f"{KB}/import", content=many, headers={"content-type": "application/gzip"})
    assert (r.status_code, r.json()["error"]["code"]) == (413, "EXPORT_TOO_LARGE")
    assert client.get(KB).json()["knowledge_bases"] == []
    # Other bodies than an archive.
    r = client.post(f"{KB}/import", content=b"{}", headers={"content-type": "text/plain"})
    assert (r.status_code, r.json()["error"]["code"]) == (415, "UNSUPPORTED_MEDIA_TYPE")


def test_who_may_export_and_import(client, key_client):
    assert client.post(KB, json={"metadata": {"name": "handbook"}}).status_code == 201
    viewer, editor, caller = key_client("viewer"), key_client("editor"), key_client("caller")
    data = export(viewer, "handbook")  # reading the base's content is enough to take it along
    r = caller.get(f"{KB}/handbook/export")
    assert (r.status_code, r.json()["error"]["code"]) == (403, "PERMISSION_DENIED")
    for who in (viewer, editor):  # importing creates a base: knowledge-bases:manage
        r = who.post(f"{KB}/import", params={"name": "copy"}, content=data, headers={"content-type": "application/gzip"})
        assert (r.status_code, r.json()["error"]["code"]) == (403, "PERMISSION_DENIED")
    r = client.get(f"{KB}/nothing/export")
    assert (r.status_code, r.json()["error"]["code"]) == (404, "BASE_NOT_FOUND")
    r = client.get(f"{KB}/handbook/export", params={"format": "markdown"})
    assert (r.status_code, r.json()["error"]["code"]) == (409, "NOT_A_MEMORY")


def test_an_export_streams_a_large_base_a_block_at_a_time(client, core):
    assert client.post(KB, json={"metadata": {"name": "big"}, "spec": {"embedding": None}}).status_code == 201
    folder = core.bases.find("default", "big").folder / "files"
    folder.mkdir(parents=True)
    (folder / "big.txt").write_bytes(os.urandom(6 << 20))  # incompressible: the archive is as large
    out = core.exchange.export(Actor.local_owner("default"), "big")
    sizes = [len(chunk) for chunk in out.chunks()]
    assert sum(sizes) > 6 << 20 and max(sizes) < 2 << 20  # never the whole file (nor archive) at once
    assert not out.snapshot.exists()  # the snapshot went once streamed


def test_a_spec_naming_what_this_instance_lacks_is_imported_without_it(client, core, elsewhere, tmp_path):
    source = tmp_path / "docs"
    source.mkdir()
    (source / "guide.md").write_text("# Guide\n\nRead me.\n")
    core.deployments.put(None, "default", "bge", core.deployments.find("default", "e5-small").spec)
    owner = Actor.local_owner("default")  # the local CLI's owner names folders; an API key does not
    core.bases.create(owner, parse_request({"metadata": {"name": "guide"}, "spec": {
        "sources": [{"folder": str(source)}], "embedding": {"deployment": "bge"}}}))
    data = export(client, "guide")
    names = tarfile.open(fileobj=io.BytesIO(data), mode="r:gz").getnames()
    assert names == ["manifest.json", "model-saves.json"]  # a source folder's files stay where they are
    answer = import_(elsewhere, data)  # an API key names no folder here: it is left out, said
    warnings = " ".join(answer["warnings"])
    assert "spec.embedding" in warnings and "'bge'" in warnings and str(source) in warnings
    assert answer["knowledge_base"]["spec"]["sources"] == []
    assert answer["knowledge_base"]["spec"]["embedding"] == {"deployment": "e5-small"}


# -- the CLI and markdown ---------------------------------------------------------------------------------------
def test_cli_export_and_import(client, core, astra, tmp_path):
    seed_documents(client, core)
    target = tmp_path / "handbook.tar.gz"
    out = astra("metis", "export", "handbook", "-o", str(target)).output
    assert f"exported handbook to {target}" in out and target.stat().st_size > 0
    assert "exists already" in astra("metis", "export", "handbook", "-o", str(target), ok=False).output
    out = astra("metis", "import", str(target), "--as", "copy").output
    assert "imported documents base copy" in out and "3 note file(s), 1 saved note(s), 1 upload(s), 2 model save(s)" in out
    assert "indexed copy" in out
    hits = client.post(f"{KB}/copy/search", json={"query": "vacation days"}).json()["results"]
    assert hits[0]["document"] == "notes:copy/leave.md"
    result = astra("metis", "import", str(target), ok=False)
    assert result.exit_code != 0 and "BASE_EXISTS" in result.output


def test_markdown_export_reads_well_and_imports_back(client, core, astra, tmp_path):
    seed_memory(client)
    folder = tmp_path / "team-facts"
    out = astra("metis", "export", "team", "--format", "markdown", "-o", str(folder)).output
    assert "3 subject page(s)" in out
    ana = (folder / "ana.md").read_text()
    current, history = ana.split("## History")
    assert "# Ana" in current and "**role**: Ana works in research." in current
    assert "held since 2026-10-12 10:05 UTC · said again 2026-11-02 · source: chat: standup" in current
    assert "**role**: Ana leads the data team." in history and "held 2026-03-01 – 2026-10-12 10:05 UTC" in history
    assert "replaced by: Ana works in research." in history
    launch = (folder / "launch.md").read_text()
    assert "The launch moved to Friday 23 October." in launch and 'wording "The launch is on Friday 16 October."' in launch
    assert (folder / "юлия.md").read_text().startswith("# Юлия")
    readme = (folder / "README.md").read_text()
    assert "[Ana](ana.md): 1 current, 1 in the history" in readme
    assert len(list((folder / "notes" / "memory").rglob("f_*.md"))) == 4
    # The folder makes the same memory again (its timeline settled from the notes).
    out = astra("metis", "import", str(folder), "--as", "team-again").output
    assert "imported memory base team-again" in out and "3 current fact(s) and 1 in the history, on 3 subject(s)" in out
    assert memory_view(client, "team-again") == memory_view(client, "team")
    assert "exists and is not an empty folder" in astra("metis", "export", "team", "--format", "markdown", "-o",
                                                        str(folder), ok=False).output


def test_a_folder_of_facts_notes_rebuilds_the_timeline(client, astra, tmp_path):
    folder = tmp_path / "memory"
    (folder / "history").mkdir(parents=True)
    # Written by hand, in the memory's form but not its order: the newer fact in history/, the older one current.
    (folder / "history" / "newer.md").write_text(
        "---\nsubject: Bruno\nattribute: city\nsaid_at: '2026-09-01'\nsource: by hand\n---\n\nBruno lives in Recife.\n")
    (folder / "older.md").write_text(
        "---\nsubject: Bruno\nattribute: city\nsaid_at: '2026-01-10'\nsource: by hand\n---\n\nBruno lives in Lisbon.\n")
    (folder / "notes.md").write_text("# Just a note\n\nNot a fact.\n")
    (folder / "secret.md").write_text(
        "---\nsubject: Bruno\nattribute: password\nsaid_at: '2026-01-10'\n---\n\nBruno's password is hunter2-Xk9#pQ.\n")
    result = astra("metis", "import", str(folder), "--as", "people")
    assert "1 current fact(s) and 1 in the history" in result.output
    assert "left out: notes/memory/notes.md: not a fact's note" in result.output
    assert "left out: notes/memory/secret.md: it looks like a secret" in result.output
    listed = client.get(f"{KB}/people/memory", params={"history": "true"}).json()
    (bruno,) = listed["subjects"][0]["facts"]
    assert bruno["fact"] == "Bruno lives in Recife." and bruno["held"] == {"from": "2026-09-01", "until": None}
    assert bruno["replaced"][0]["fact"] == "Bruno lives in Lisbon." and bruno["replaced"][0]["until"] == "2026-09-01"
    # A folder of no facts is not a memory.
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "readme-like.md").write_text("# Hello\n")
    result = astra("metis", "import", str(empty), "--as", "nothing", ok=False)
    assert result.exit_code != 0 and "EXPORT_INVALID" in result.output and "holds no facts' notes" in result.output
    # Without a name and without a manifest, the folder says none.
    result = astra("metis", "import", str(folder), ok=False)
    assert result.exit_code != 0 and "INVALID_NAME" in result.output


def test_cli_against_a_server_streams_both_ways(client, core, astra, tmp_path, monkeypatch):
    from tests.docs_helpers import served

    # Keywords only: the point is the bytes each way (several blocks of 1 MiB), not embedding them.
    assert client.post(KB, json={"metadata": {"name": "bulk"}, "spec": {"embedding": None}}).status_code == 201
    big = os.urandom(1 << 20).hex().encode()  # 2 MiB of text
    folder = core.bases.find("default", "bulk").folder / "files"
    folder.mkdir(parents=True)
    (folder / "big.txt").write_bytes(big)
    target = tmp_path / "bulk.tar.gz"
    with served(core) as api:
        monkeypatch.setenv("ASTRALYX_API", api)
        assert "exported bulk" in astra("metis", "export", "bulk", "-o", str(target)).output
        out = astra("metis", "import", str(target), "--as", "remote-copy").output
    assert "imported documents base remote-copy" in out and "1 upload(s)" in out and "indexed remote-copy" in out
    assert (core.bases.find("default", "remote-copy").folder / "files" / "big.txt").read_bytes() == big
    assert not list(tmp_path.glob(".bulk.tar.gz.*"))  # the download's temporary file went


def test_a_fact_that_says_a_secret_is_left_out_of_an_imported_memory(client, core, elsewhere, tmp_path):
    # An archive made by hand (or by an older secrets detector) holding a fact that says a password: the import
    # leaves it out, says so, and the timeline it would have topped is settled without it.
    seed_memory(client)
    with tarfile.open(fileobj=io.BytesIO(export(client, "team")), mode="r:gz") as tar:
        members = [(m, tar.extractfile(m).read() if m.isfile() else None) for m in tar.getmembers()]
    secret = (b"---\nsubject: Ana\nattribute: role\nsaid_at: '2026-12-01'\nkept_at: '2026-12-01T00:00:00.000000Z'\n"
              b"source: chat 1-1\n---\n\nAna's email password is hunter2-Xk9#pQ.\n")
    members.append(file("base/notes/memory/f_00000000000000aa.md", secret))
    answer = import_(elsewhere, tar_gz(members))
    assert {"file": "notes/memory/f_00000000000000aa.md",
            "why": "it looks like a secret (a password, a key, a card number…): secrets are never kept"} in answer["skipped"]
    listed = elsewhere.get(f"{KB}/team/memory").json()
    ana = next(s for s in listed["subjects"] if s["subject"] == "Ana")["facts"][0]
    assert ana["fact"] == "Ana works in research."
    found = elsewhere.post(f"{KB}/team/search", json={"query": "Ana password hunter2"}).json()["results"]
    assert found and all("hunter2" not in r["text"] for r in found)
    # Nowhere on the second instance's disk (its files, its index), the work folder of the import included.
    leaked = [p for p in (tmp_path / "elsewhere").rglob("*") if p.is_file() and b"hunter2" in p.read_bytes()]
    assert leaked == []
