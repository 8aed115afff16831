"""Settings the core reads when it builds its collaborators (not switches set on a class or a module)."""

from __future__ import annotations

from astralyx.config import Settings
from astralyx.core import Astralyx


def test_search_and_sync_modes_are_settings_of_one_core(home, monkeypatch):
    monkeypatch.setenv("ASTRALYX_EXACT_SEARCH", "1")
    (home / "config.toml").write_text("yield_to_searches = false\n")
    exact = Astralyx(Settings.load(home))
    monkeypatch.delenv("ASTRALYX_EXACT_SEARCH")
    (home / "config.toml").unlink()
    default = Astralyx(Settings.load(home))  # on the same data directory, in the same process
    try:
        assert (exact.index.exact, exact.index.yield_to_searches) == (True, False)
        assert (default.index.exact, default.index.yield_to_searches) == (False, True)
    finally:
        exact.close()
        default.close()
