"""The connection pools to a PostgreSQL database are one per process, shared by every core on it: their sizes are
the first open core's until the last closes. A core opened meanwhile asking for other sizes is told so in the log
(it no longer resizes, silently, the pools the first core relies on); once every core has closed, the next one's
sizes apply."""

from __future__ import annotations

import logging

from astralyx.engines import postgres
from astralyx.engines.postgres import Database, PoolSettings

FIRST = PoolSettings(size=3, lock_size=2, timeout=5.0)
SECOND = PoolSettings(size=7, lock_size=4, timeout=2.0)


def test_a_second_core_with_other_pool_sizes_keeps_the_firsts_and_is_told(postgres_server, caplog):
    with postgres_server.database() as url:
        first = Database(url, name="records", pool=FIRST)
        assert first.scalar("SELECT 1") == 1
        with postgres.borrow(url) as conn:
            assert conn.execute("SELECT 1").fetchone()[0] == 1
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="astralyx"):
            second = Database(url, name="records", pool=SECOND)
        assert postgres.settings_of(url) == FIRST  # the first core's pools are not resized under it
        assert second.scalar("SELECT 2") == 2
        told = [r.getMessage() for r in caplog.records if "connection pools" in r.getMessage()]
        assert len(told) == 1
        assert "size 3, lock size 2, timeout 5 s" in told[0] and "size 7, lock size 4, timeout 2 s" in told[0]
        assert "postgres@" in told[0]

        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="astralyx"):
            same = Database(url, name="records", pool=FIRST)  # the same sizes: nothing to say
        assert not [r for r in caplog.records if "connection pools" in r.getMessage()]

        for db in (first, second, same):
            db.close()
        third = Database(url, name="records", pool=SECOND)  # every core closed: the next one sizes them
        try:
            assert postgres.settings_of(url) == SECOND
            assert third.scalar("SELECT 3") == 3
        finally:
            third.close()
