"""A core built in one place (issue 31, point 3): each service gets what it needs at construction, in dependency
order; where two need each other, the later one registers once with the earlier one's callback list (the hooks).
Nothing sets an attribute of a service from outside after it is built."""

from __future__ import annotations

import ast
from pathlib import Path

from astralyx.config import Settings
from astralyx.core import Astralyx

CORE = Path(__file__).resolve().parent.parent / "astralyx" / "core.py"
# The callback lists a service offers the ones built after it (the emitter's side of a cycle).
HOOKS = {"listeners", "validators", "on_delete", "on_create"}


def _root(node: ast.expr) -> list[str]:
    """self.index.open_store → ["self", "index", "open_store"] (a Name then attributes; [] otherwise)."""
    names: list[str] = []
    while isinstance(node, ast.Attribute):
        names.insert(0, node.attr)
        node = node.value
    return [node.id, *names] if isinstance(node, ast.Name) else []


def outside_wiring(source: str) -> list[str]:
    """What the core's __init__ does to a service after building it, other than registering a hook: an attribute
    or item of another object assigned (self.index.exact = …, self.search.rerankers["memory"] = …), or a method of a
    service called (self.index.register_reader(…)); `self.x.<hook>.append(…)` is a hook's registration."""
    tree = ast.parse(source)
    init = next(node for cls in tree.body if isinstance(cls, ast.ClassDef) and cls.name == "Astralyx"
                for node in cls.body if isinstance(node, ast.FunctionDef) and node.name == "__init__")
    found = []
    for node in ast.walk(init):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, ast.AugAssign | ast.AnnAssign):
            targets = [node.target]
        for target in targets:
            if isinstance(target, ast.Subscript) or (isinstance(target, ast.Attribute) and len(_root(target)) != 2):
                found.append(f"line {node.lineno}: {ast.unparse(target)} = …")
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            chain = _root(node.func)
            if chain[:1] != ["self"] or len(chain) < 3 or chain[1] in ("home", "settings"):
                continue  # a function of a module, a Path, the settings
            if len(chain) == 4 and chain[2] in HOOKS and chain[3] in ("append", "insert"):
                continue
            found.append(f"line {node.lineno}: {ast.unparse(node.func)}(…)")
    return found


def test_the_core_hands_each_service_what_it_needs_when_it_builds_it():
    assert outside_wiring(CORE.read_text(encoding="utf-8")) == []


def test_what_counts_as_wiring_from_outside():
    source = '''
class Astralyx:
    def __init__(self):
        self.index = Index(self.bases)
        self.index.exact = True
        self.search.rerankers["memory"] = rerank
        self.index.register_reader("notes/memory/", reader)
        self.bases.on_delete.append(self.index.drop)
        self.home.mkdir(parents=True)
'''
    assert [line.split(": ", 1)[1] for line in outside_wiring(source)] == [
        "self.index.exact = …", "self.search.rerankers['memory'] = …", "self.index.register_reader(…)"]


def test_the_hooks_between_services_are_the_documented_ones(home):
    core = Astralyx(Settings.load(home))
    try:
        assert core.writer.subscribers == [core.index.on_change]
        assert core.deployments.listeners == [core.runtimes.drop]
        assert len(core.deployments.validators) == 1  # a chat deployment's tools name bases that exist
        # a sync under way is stopped first, then the index and the model saves let the base go
        assert core.bases.on_delete[1:] == [core.index.drop, core.saves.forget_base]
        assert core.workspaces.on_create == [core._default_deployments]
        assert core.bases.health == core.runtimes.health
        assert set(core.search.rerankers) == {"memory"}
        assert core.index.reader_for("notes/memory/f_1.md") is not core.index.reader_for("notes/a.md")
        assert core.index.locks is core.locks and core.writer.locks is core.locks
    finally:
        core.close()
