"""Keyword stems from several threads at once (searches, syncs and sidecar builds stem together): PyStemmer's
objects are not thread-safe ("must not be called concurrently"), so each thread stems with its own."""

from __future__ import annotations

import threading

from astralyx.metis.index import keywords
from astralyx.metis.index.keywords import stems

TEXT = ("Connections generalizations relational running happiness conditional nations walked; "
        "the café's naïve rôles, connected and generalized relations")


def test_threads_stem_at_once_and_each_gets_what_one_alone_gets():
    expected = stems(TEXT)
    assert expected[:4] == ["connect", "gener", "relat", "run"]
    start = threading.Barrier(8)
    got: list[list[str]] = []
    stemmers: list[object] = []  # kept alive: an id() is reused once its object is gone
    guard = threading.Lock()

    def stem_many() -> None:
        start.wait()
        mine = [stems(TEXT) for _ in range(300)]
        with guard:
            got.extend(mine)
            stemmers.append(keywords._stemmers.porter)

    threads = [threading.Thread(target=stem_many) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert len(got) == 8 * 300 and all(words == expected for words in got)
    assert len({id(s) for s in stemmers}) == 8  # one stemmer per thread, none shared
