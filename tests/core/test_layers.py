"""Layering: storage sits below the memory, merge and transcript layers and imports none of them
(only the shared data models). A store that needed the memory layer's text analysis would tie
two rules (how an item is indexed, how a query is split) to two places."""

from __future__ import annotations

import ast
from pathlib import Path

import infinite_context_brain.core.storage as storage

CORE = "infinite_context_brain.core"
#: modules of layers above storage that storage may still use: pure data models
ALLOWED_ABOVE = {f"{CORE}.memory.model"}
ABOVE = (
    f"{CORE}.memory",
    f"{CORE}.merge",
    f"{CORE}.transcript",
    f"{CORE}.brain",
    "infinite_context_brain.server",
)


def _imports(path: Path, package: str) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            parts = package.split(".")
            base = parts[: len(parts) - node.level + 1] if node.level else []
            module = ".".join([*base, *([node.module] if node.module else [])])
            found.add(module)
            found.update(f"{module}.{alias.name}" for alias in node.names)
    return found


def test_storage_imports_no_layer_above_it() -> None:
    folder = Path(storage.__file__).parent
    offending = []
    for path in sorted(folder.glob("*.py")):
        for name in _imports(path, storage.__name__):
            if name.startswith(ABOVE) and not any(
                name == ok or name.startswith(ok + ".") for ok in ALLOWED_ABOVE
            ):
                offending.append(f"{path.name}: {name}")
    assert offending == []
