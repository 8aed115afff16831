"""One signing key for every replica: from the shared data directory, or ASTRALYX_RECEIPTS_KEY."""

from __future__ import annotations

import threading

import pytest

from astralyx.eos.receipts import KEY_ENV, load_or_create_key


def test_processes_starting_together_on_one_data_directory_end_up_with_one_key(tmp_path):
    path = tmp_path / "keys" / "receipts.ed25519"
    keys: list[bytes] = []
    start = threading.Barrier(8)

    def make() -> None:
        start.wait()
        keys.append(bytes(load_or_create_key(path).verify_key))

    threads = [threading.Thread(target=make) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert len(keys) == 8 and len(set(keys)) == 1
    assert bytes(load_or_create_key(path).verify_key) == keys[0]
    assert [p.name for p in path.parent.iterdir()] == ["receipts.ed25519"]  # no temp left
    assert path.stat().st_mode & 0o777 == 0o600


def test_the_key_from_the_environment_is_the_same_everywhere_and_a_bad_one_says_what_to_give(tmp_path, monkeypatch):
    monkeypatch.setenv(KEY_ENV, "ab" * 32)
    a = load_or_create_key(tmp_path / "a" / "receipts.ed25519")
    b = load_or_create_key(tmp_path / "b" / "receipts.ed25519")
    assert bytes(a) == bytes(b) == bytes.fromhex("ab" * 32)
    assert not (tmp_path / "a").exists()  # nothing written when the environment gives the key
    monkeypatch.setenv(KEY_ENV, "not-hex")
    with pytest.raises(RuntimeError, match="64 hex digits"):
        load_or_create_key(tmp_path / "c" / "receipts.ed25519")
