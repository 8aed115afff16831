"""Imports go one way: shells (server, cli, console, mcp) → domain (metis, eos, auth, core) → engines, never back.

Every import statement of the package is read (with ast: at module level, in functions and under TYPE_CHECKING
alike, since each is a dependency all the same): engines/ and locks.py import nothing of astralyx but the engines,
errors and util; the domain imports no shell.
"""

from __future__ import annotations

import ast
from pathlib import Path

import astralyx

ROOT = Path(astralyx.__file__).parent
SHELLS = ("astralyx.server", "astralyx.cli", "astralyx.console", "astralyx.mcp")
DOMAIN = ("astralyx.metis", "astralyx.eos", "astralyx.auth")
BELOW_EVERYTHING = ("astralyx.errors", "astralyx.util")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports() -> dict[str, set[str]]:
    """Each module of astralyx → the astralyx modules it imports (a `from x import y` counted as x.y and x)."""
    found: dict[str, set[str]] = {}
    for path in sorted(ROOT.rglob("*.py")):
        name = module_name(path)
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        targets: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                    base = ".".join([*anchor, base] if base else anchor)
                targets.add(base)
                targets.update(f"{base}.{a.name}" for a in node.names)
        found[name] = {t for t in targets if t == "astralyx" or t.startswith("astralyx.")}
    return found


def under(name: str, packages: tuple[str, ...]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in packages)


def test_the_import_reader_sees_relative_imports() -> None:
    seen = imports()
    assert "astralyx.engines.postgres" in seen["astralyx.locks"]  # `from .engines.postgres import advisory`
    assert "astralyx.metis.index.copies" in seen["astralyx.metis.index.sqlite_store"]  # `from . import copies`


def test_engines_and_locks_import_nothing_above_them() -> None:
    wrong = {
        f"{module} → {target}"
        for module, targets in imports().items() if under(module, ("astralyx.engines",)) or module == "astralyx.locks"
        for target in targets
        if not under(target, ("astralyx.engines", *BELOW_EVERYTHING)) and target != "astralyx"
    }
    assert wrong == set()


def test_the_domain_imports_no_shell() -> None:
    wrong = {
        f"{module} → {target}"
        for module, targets in imports().items() if under(module, DOMAIN)
        for target in targets if under(target, SHELLS)
    }
    assert wrong == set()
