"""`astra metis create --include/--exclude` and `astra metis update`: a base's spec changed after creation,
through PUT …/knowledge-bases/<b> (the same domain call as the API and the console)."""

from __future__ import annotations

import json


def _spec(astra, name: str) -> dict:
    listed = json.loads(astra("metis", "bases", "--json").output)["knowledge_bases"]
    return next(b["spec"] for b in listed if b["metadata"]["name"] == name)


def _folder(tmp_path, *names: str):
    src = tmp_path / "docs"
    for name in names:
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        (src / name).write_text(f"# {name}\n\nAbout {name}.\n")
    return src


def test_create_with_patterns_then_update_them(astra, tmp_path):
    src = _folder(tmp_path, "a.md", "drafts/b.md", "old/c.md")
    astra("metis", "create", "handbook", "--source", str(src), "--include", "*.md", "--exclude", "drafts/**")
    assert _spec(astra, "handbook")["sources"] == [{"folder": str(src), "include": ["*.md"], "exclude": ["drafts/**"]}]
    assert "(include *.md; exclude drafts/**)" in " ".join(astra("metis", "bases").output.split())
    astra("metis", "sync", "handbook")
    docs = json.loads(astra("metis", "documents", "handbook", "--json").output)["documents"]
    assert [d["document"] for d in docs] == ["docs:handbook/a.md", "docs:handbook/old/c.md"]

    out = astra("metis", "update", "handbook", "--exclude", "old/**").output
    assert f"updated handbook: embedding e5-small, source {src} (include *.md; exclude old/**)" in out
    assert "the next sync indexes what the folders hold now: astra metis sync handbook" in out
    astra("metis", "sync", "handbook")
    docs = json.loads(astra("metis", "documents", "handbook", "--json").output)["documents"]
    assert [d["document"] for d in docs] == ["docs:handbook/a.md", "docs:handbook/drafts/b.md"]

    # '' clears a list; another folder replaces the old one; a folder kept keeps its patterns
    astra("metis", "update", "handbook", "--include", "")
    assert _spec(astra, "handbook")["sources"] == [{"folder": str(src), "exclude": ["old/**"]}]
    other = tmp_path / "wiki"
    other.mkdir()
    astra("metis", "update", "handbook", "--source", str(src), "--source", str(other))
    assert _spec(astra, "handbook")["sources"] == [{"folder": str(src), "exclude": ["old/**"]}, {"folder": str(other)}]
    astra("metis", "update", "handbook", "--no-sources")
    assert _spec(astra, "handbook")["sources"] == []


def test_update_embedding_extractor_and_mcp(astra):
    astra("metis", "create", "team", "--kind", "memory")
    out = astra("metis", "update", "team", "--no-embedding", "--mcp-save", "on_its_own").output
    assert "updated team: embedding none (keywords)" in out
    spec = _spec(astra, "team")
    assert "embedding" not in spec and spec["mcp"] == {"save": "on_its_own"} and spec["kind"] == "memory"
    out = astra("metis", "update", "team", "--embedding", "e5-small").output
    assert "the next sync embeds every passage again: astra metis sync team" in out
    assert _spec(astra, "team")["embedding"] == {"deployment": "e5-small"}
    data = json.loads(astra("metis", "update", "team", "--no-extractor", "--json").output)
    assert data["metadata"]["name"] == "team" and data["spec"]["embedding"] == {"deployment": "e5-small"}


def test_update_refuses_what_cannot_be(astra, tmp_path):
    astra("metis", "create", "handbook")
    missing = astra("metis", "update", "handbook", "--embedding", "nope", ok=False)
    assert missing.exit_code == 1 and "DEPLOYMENT_NOT_FOUND" in missing.output and "astra eos deployments" in missing.output
    nothing = astra("metis", "update", "handbook", ok=False)
    assert nothing.exit_code == 2 and "Say what to change" in nothing.output
    both = astra("metis", "update", "handbook", "--embedding", "e5-small", "--no-embedding", ok=False)
    assert both.exit_code == 2 and "opposite" in both.output
    no_folder = astra("metis", "update", "handbook", "--include", "*.md", ok=False)
    assert no_folder.exit_code == 2 and "add one with --source" in no_folder.output
    bad = astra("metis", "update", "handbook", "--source", str(tmp_path), "--exclude", "../x", ok=False)
    assert bad.exit_code == 1 and "INVALID_SPEC" in bad.output and "points out of the folder" in bad.output
    memory = astra("metis", "create", "team", "--kind", "memory")
    assert memory.exit_code == 0
    sources = astra("metis", "update", "team", "--source", str(tmp_path), ok=False)
    assert sources.exit_code == 1 and "leave sources empty" in sources.output
    gone = astra("metis", "update", "nowhere", "--embedding", "e5-small", ok=False)
    assert gone.exit_code == 1 and "BASE_NOT_FOUND" in gone.output
    create = astra("metis", "create", "x", "--include", "*.md", ok=False)
    assert create.exit_code == 2 and "name a --source" in create.output
