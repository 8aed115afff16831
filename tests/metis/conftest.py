"""Fixtures of the index, search and sync tests."""

from __future__ import annotations

import pytest

from astralyx.metis import jobs

from .kit import Child


@pytest.fixture
def no_stale(monkeypatch):
    # A heartbeat never goes stale in these tests: what ends the dead job is its process being gone.
    monkeypatch.setattr(jobs, "STALE", 3600.0)
    yield
    while Child.started:
        child = Child.started.pop()
        if child.process.poll() is None:
            child.kill()
