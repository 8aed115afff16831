"""Temp files of interrupted atomic writes are removed at start: only ours, only once no writer can be at them."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from astralyx.config import Settings
from astralyx.core import Astralyx
from astralyx.util import TEMP_GRACE_SECONDS, TEMP_RE

ROOT = Path(__file__).resolve().parent.parent


def make(path: Path, text: str = "half a write", *, age: float = TEMP_GRACE_SECONDS + 60) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return aged(path, age)


def aged(path: Path, age: float = TEMP_GRACE_SECONDS + 60) -> Path:
    stamp = time.time() - age
    os.utime(path, (stamp, stamp), follow_symlinks=False)
    return path


def start(home: Path) -> None:
    Astralyx(Settings.load(home)).start().close()


def test_a_write_killed_before_its_rename_leaves_a_temp_that_the_next_start_removes(client, core, home):
    assert client.post("/v1/metis/knowledge-bases", json={"metadata": {"name": "handbook"}}).status_code == 201
    core.close()
    # The process dies between writing the temp file and renaming it (as at a power cut).
    crash = textwrap.dedent(f"""
        import os
        from astralyx.config import Settings
        from astralyx.core import Astralyx
        from astralyx.auth.actor import Actor
        core = Astralyx(Settings.load({str(home)!r})).start()
        os.replace = lambda src, dst: os._exit(9)
        core.notes.write(Actor.of("default", "admin"), "handbook", "notes", "plans/offsite.md", "Porto.")
    """)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    assert subprocess.run([sys.executable, "-c", crash], env=env, timeout=120).returncode == 9
    folder = home / "bases/default/handbook/notes/plans"
    left = [p for p in folder.iterdir()]
    assert len(left) == 1 and TEMP_RE.match(left[0].name) and left[0].name.startswith(".offsite.md.")
    start(home)
    assert left[0].exists(), "a temp file this young may be a live write: it stays"
    aged(left[0])
    start(home)
    assert not left[0].exists() and list(folder.iterdir()) == []


def test_only_our_old_temp_files_in_base_folders_go(client, core, home):
    for body in ({"metadata": {"name": "handbook"}}, {"metadata": {"name": "team"}, "spec": {"kind": "memory"}}):
        assert client.post("/v1/metis/knowledge-bases", json=body).status_code == 201
    client.put("/v1/metis/knowledge-bases/handbook/notes/plans/offsite.md", json={"content": "Porto."})
    handbook, team = home / "bases/default/handbook", home / "bases/default/team"
    orphans = [
        make(handbook / "notes/plans/.offsite.md.k3j_9x2a.tmp"),
        make(team / "notes/memory/.f_0123456789abcdef.md.ab12cd34.tmp"),
        make(handbook / "files/.leave.pdf.zz99yy88.tmp"),
    ]
    live = make(handbook / "notes/.fresh.md.a1b2c3d4.tmp", age=5)  # a writer in another process, still at it
    kept = [
        make(handbook / "notes/.notes.md.tmp", "someone's file"),  # no mkstemp part: not ours
        make(handbook / "notes/plan.abcdefgh.tmp", "someone's file"),  # not hidden: not ours
        make(handbook / "files/.leave.pdf.ABCDEFGH.tmp", "someone's file"),  # mkstemp never uses capitals
        make(home / "bases/.orphan.md.a1b2c3d4.tmp", "x"),  # not in a base's folder
    ]
    target = make(handbook / "target.txt", "linked")
    link = handbook / "notes/.link.md.q1w2e3r4.tmp"
    link.symlink_to(target)
    aged(link)
    core.close()

    again = Astralyx(Settings.load(home)).start()
    try:
        assert [f for f in orphans if f.exists()] == []
        assert live.exists() and all(f.exists() for f in kept)
        assert link.is_symlink() and target.read_text() == "linked"
        base = again.bases.find("default", "handbook")
        assert again.notes.read_in(base, "notes", "plans/offsite.md").content == "Porto."
    finally:
        again.close()
