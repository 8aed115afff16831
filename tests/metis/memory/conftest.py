"""A memory base `team` in workspace `default`, and helpers to read what is on disk."""

from __future__ import annotations

from pathlib import Path

import pytest

from astralyx.auth.actor import Actor
from astralyx.metis.bases import KnowledgeBaseRequest


@pytest.fixture
def admin() -> Actor:
    return Actor.of("default", "admin")


@pytest.fixture
def team(core, admin):
    request = {"metadata": {"name": "team"}, "spec": {"kind": "memory"}}
    return core.bases.create(admin, KnowledgeBaseRequest.model_validate(request))


def files(base_folder: Path) -> dict[str, str]:
    """Every fact file of a base: {"current/<id>" or "history/<id>": text}."""
    out = {}
    for status, folder in (("current", base_folder / "notes/memory"), ("history", base_folder / "notes/memory/history")):
        for f in sorted(folder.glob("f_*.md")) if folder.exists() else []:
            out[f"{status}/{f.stem}"] = f.read_text()
    return out
