"""The native libraries of the vector sidecar and the embedded embedders load in either order of first use."""

from __future__ import annotations

import subprocess
import sys


def test_a_sidecar_loaded_before_the_embedder_does_not_crash_the_process(tmp_path):
    # In a fresh process: the vector sidecar's library first (a base's saved graph loaded at a write or
    # a search), the embedder's onnxruntime after it (the first query embedded).
    code = (
        "from astralyx.metis.index import vectors\n"
        "index = vectors._new_index(8)\n"
        "import onnxruntime\n"
        "print('both loaded', len(index), onnxruntime.__version__ != '')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])
    assert "both loaded 0 True" in done.stdout
