"""What a folder source indexes: include/exclude globs per source, the default excludes, through the API and CLI."""

from __future__ import annotations

import pytest

from astralyx.metis.sources import Rule

from .kit import write


@pytest.fixture(autouse=True)
def _source_roots(monkeypatch, tmp_path):
    """API keys name folder sources here: the operator allows the test's folder (metis/roots.py)."""
    monkeypatch.setenv("ASTRALYX_SOURCE_ROOTS", str(tmp_path))


BASE = "/v1/metis/knowledge-bases/{}"


def _documents(client, name: str) -> list[str]:
    return [d["document"] for d in client.get(BASE.format(name) + "/documents").json()["documents"]]


def _folder(tmp_path):
    src = tmp_path / "book"
    for rel in ("index.md", "guide/intro.html", "guide/licensing-policy.md", "print.html", "drafts/next.md",
                "old/ch1.md", "old/keep/ch2.md", "build/out.html",
                # left out by default: hidden, version control, packages, caches, fonts, licences, backups
                ".hidden.md", ".git/HEAD.md", ".github/CONTRIBUTING.md", "node_modules/pkg/README.md",
                "__pycache__/x.txt", "venv/lib/site.txt", "fonts/OPEN-SANS-LICENSE.txt", "LICENSE.txt",
                "LICENSE-MIT.md", "COPYING.txt", "theme/FontAwesome-LICENSE.txt", "index.md~", "notes.md.bak"):
        write(src, rel, f"# {rel}\n\nText of {rel}.\n")
    return src


def test_default_excludes_leave_out_hidden_files_version_control_and_junk(client, tmp_path):
    src = _folder(tmp_path)
    r = client.post("/v1/metis/knowledge-bases", json={"metadata": {"name": "book"}, "spec": {"sources": [{"folder": str(src)}]}})
    assert r.status_code == 201, r.text
    assert r.json()["spec"]["sources"] == [{"folder": str(src)}]  # no patterns: the spec reads as before
    client.post(BASE.format("book") + "/sync")
    assert _documents(client, "book") == [
        "docs:book/drafts/next.md", "docs:book/guide/intro.html", "docs:book/guide/licensing-policy.md",
        "docs:book/index.md", "docs:book/old/ch1.md", "docs:book/old/keep/ch2.md", "docs:book/print.html",
    ]


def test_include_and_exclude_globs_choose_the_files(client, tmp_path):
    src = _folder(tmp_path)
    source = {"folder": str(src), "include": ["*.md", "guide/**", "build/**", ".github/**"],
              "exclude": ["drafts", "old/*.md", "print.html"]}
    r = client.post("/v1/metis/knowledge-bases", json={"metadata": {"name": "book"}, "spec": {"sources": [source]}})
    assert r.status_code == 201, r.text
    assert r.json()["spec"]["sources"] == [source]
    client.post(BASE.format("book") + "/sync")
    # build/ and .github/ are named by an include: the default excludes give way; .git never does
    assert _documents(client, "book") == [
        "docs:book/.github/CONTRIBUTING.md", "docs:book/build/out.html", "docs:book/guide/intro.html",
        "docs:book/guide/licensing-policy.md", "docs:book/index.md", "docs:book/old/keep/ch2.md",
    ]


def test_changing_the_patterns_changes_what_the_next_sync_holds(client, tmp_path):
    src = _folder(tmp_path)
    client.post("/v1/metis/knowledge-bases", json={"metadata": {"name": "book"}, "spec": {"sources": [{"folder": str(src)}]}})
    client.post(BASE.format("book") + "/sync")
    assert "docs:book/print.html" in _documents(client, "book")
    spec = client.get(BASE.format("book")).json()["spec"]
    spec["sources"][0]["exclude"] = ["print.html", "old/**", "drafts/"]
    r = client.put(BASE.format("book"), json={"spec": spec})
    assert r.status_code == 200 and r.json()["spec"]["sources"][0]["exclude"] == ["print.html", "old/**", "drafts/"]
    report = client.post(BASE.format("book") + "/sync").json()
    assert report["removed"] == 4
    assert _documents(client, "book") == [
        "docs:book/guide/intro.html", "docs:book/guide/licensing-policy.md", "docs:book/index.md",
    ]
    found = client.post(BASE.format("book") + "/search", json={"query": "print"}).json()["results"]
    assert all(r["document"] != "docs:book/print.html" for r in found)


@pytest.mark.parametrize(("patterns", "says"), [
    (["../secrets/**"], "points out of the folder"),
    ([""], "1 to 500 characters"),
    (["a\\b.md"], "backslash"),
    (["*.md"] * 101, "at most 100 patterns"),
])
def test_bad_patterns_are_refused_with_how_to_write_them(client, tmp_path, patterns, says):
    r = client.post("/v1/metis/knowledge-bases", json={
        "metadata": {"name": "bad"}, "spec": {"sources": [{"folder": str(tmp_path), "exclude": patterns}]}})
    assert r.status_code == 422 and r.json()["error"]["code"] == "INVALID_SPEC"
    assert says in r.json()["error"]["message"] and "exclude" in r.json()["error"]["message"]
    assert client.get(BASE.format("bad")).status_code == 404


def _kept(rule: Rule, path: str) -> bool:
    parts = tuple(path.split("/"))
    return all(rule.enters(parts[:i]) for i in range(1, len(parts))) and rule.keeps(parts)


def test_glob_rules():
    rule = Rule(include=["docs/**", "*.txt"], exclude=["*/draft-*", "tmp/", "/top.txt"])
    assert _kept(rule, "docs/a/b/c.md") and _kept(rule, "deep/er/notes.txt")
    assert not _kept(rule, "other/a.md")  # not included
    assert not _kept(rule, "docs/draft-1.md")  # * stays within one name: docs/draft-1.md matches */draft-*
    assert _kept(rule, "docs/x/draft-1.md")  # …but not docs/x/draft-1.md (anchored, two names)
    assert not _kept(rule, "docs/tmp/a.md") and _kept(rule, "docs/tmp.md")  # tmp/ is a folder only
    assert not _kept(rule, "top.txt") and _kept(rule, "docs/top.txt")  # a leading / anchors
    assert not _kept(Rule(), "Node_Modules/x.md")  # default names without case
    assert _kept(Rule(), "docs/builder/x.md") and not _kept(Rule(), "docs/build/x.md")
    # licences as projects name them, not a handbook's pages about licences or notice periods
    for junk in ("LICENSE", "LICENSE-APACHE.md", "License.md", "license.txt", "NOTICE.txt", "COPYING", "OFL.txt",
                 "SOURCE-CODE-PRO-LICENSE.txt", "notes.md~", "#notes.md#", "~$report.md", "draft.MD.BAK"):
        assert not _kept(Rule(), junk), junk
    for page in ("license-policy.md", "notice-period.md", "licensing.md", "copyright.md", "Licences and fonts.md"):
        assert _kept(Rule(), page), page
