"""A native crash (a segfault in llama.cpp or sqlite) ends pytest before it reports: the suite still names the
test that was running (conftest.py's RUNNING file, which `make test` prints; xdist names a crashed worker's)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.skipif(os.environ.get("ASTRALYX_CRASH_NOW") != "1", reason="crashes on purpose, run by the test below")
def test_a_native_crash():
    os.kill(os.getpid(), signal.SIGSEGV)


def test_a_crash_names_the_test_that_was_running(tmp_path):
    running = tmp_path / "running"
    env = {**os.environ, "ASTRALYX_CRASH_NOW": "1", "ASTRALYX_TEST_RUNNING": str(running)}
    env.pop("PYTEST_XDIST_WORKER", None)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
         "tests/test_crash_report.py::test_a_native_crash"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == -signal.SIGSEGV, done.stdout + done.stderr
    assert "Segmentation fault" in done.stderr  # faulthandler's stacks
    assert running.read_text().strip() == "tests/test_crash_report.py::test_a_native_crash"
