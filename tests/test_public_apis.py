"""The product stands on its libraries' public APIs: no module path, name or attribute with a leading
underscore from another package (``from mcp.server._otel import ...``, ``server._lowlevel_server``),
and no patching of a module (``setattr(module, ...)``, ``module.attr = ...``). A minor release may
rename anything private; a server that used it would stop before answering `initialize`. And every
package the code imports is declared in pyproject.toml.

Read from the source of shared/, server/ and notebook/ (the parsed syntax, not text). An attribute
``obj._name`` is ours when some class or module of ours defines ``_name``; any other is a private
name of a library.
"""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from collections.abc import Iterator
from importlib.metadata import packages_distributions
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SOURCES = sorted(p for part in ("shared", "server", "notebook") for p in (REPO / part).rglob("*.py"))
OURS = "infinite_context_brain"
#: underscore names that are public by their library's own documentation
DOCUMENTED = {
    "_exit",  # os._exit
    "_asdict",  # namedtuple
    "_replace",
    "_fields",
    "_make",
    "_repr_mimebundle_",  # IPython's rich display protocol
}
#: argparse's parser internals (the standard library, released with Python, not another package):
#: the CLI's help listing reads them (server/cli/parser.py)
STANDARD_LIBRARY = {"_actions", "_option_string_actions", "_SubParsersAction"}
#: module attributes Python documents as replaceable
REPLACEABLE = {("sys", "stdout"), ("sys", "stderr"), ("sys", "stdin")}


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _trees(sources: list[Path]) -> Iterator[tuple[Path, ast.Module]]:
    for path in sources:
        yield path, ast.parse(path.read_text(encoding="utf-8"), str(path))


def _defined_here(sources: list[Path]) -> set[str]:
    """Every underscore name some module of ours defines (functions, classes, attributes set on
    an object, module names, variables, parameters)."""
    names = {p.stem for p in sources if _private(p.stem)}
    for _path, tree in _trees(sources):
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                names.add(node.attr)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
            elif isinstance(node, ast.arg):
                names.add(node.arg)
            elif isinstance(node, ast.alias) and node.asname:
                names.add(node.asname)
    return {n for n in names if _private(n)}


def _findings(sources: list[Path]) -> list[str]:
    ours = _defined_here(sources)
    found: list[str] = []
    for path, tree in _trees(sources):
        where = path.relative_to(REPO) if path.is_relative_to(REPO) else path.name
        modules: set[str] = set()  # names bound to a module by `import x` / `import x.y as z`
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    modules.add(alias.asname or alias.name.split(".")[0])
                    if alias.name.split(".")[0] != OURS and any(map(_private, alias.name.split("."))):
                        found.append(f"{where}:{node.lineno}: import {alias.name}")
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                if node.module.split(".")[0] == OURS:
                    continue
                parts = node.module.split(".") + [a.name for a in node.names]
                if any(map(_private, parts)):
                    found.append(f"{where}:{node.lineno}: from {node.module} import ...")
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and _private(node.attr)
                and node.attr not in ours | DOCUMENTED | STANDARD_LIBRARY
            ):
                found.append(f"{where}:{node.lineno}: .{node.attr}")
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "setattr"
                and node.args
                and isinstance(node.args[0], ast.Name)
                and node.args[0].id in modules
            ):
                found.append(f"{where}:{node.lineno}: setattr on module {node.args[0].id}")
            if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    if (
                        isinstance(target, ast.Attribute)
                        and isinstance(target.value, ast.Name)
                        and target.value.id in modules
                        and (target.value.id, target.attr) not in REPLACEABLE
                    ):
                        found.append(f"{where}:{node.lineno}: assigns {target.value.id}.{target.attr}")
    return found


def test_no_private_names_of_other_packages_and_no_patched_modules() -> None:
    assert _findings(SOURCES) == []


@pytest.mark.parametrize(
    ("source", "finding"),
    [
        ("from mcp.server._otel import OpenTelemetryMiddleware\n", "from mcp.server._otel"),
        ("from mcp.server import _otel\n", "from mcp.server import"),
        ("import mcp.shared._context_streams\n", "import mcp.shared._context_streams"),
        ("def f(app):\n    return app._lowlevel_server\n", "._lowlevel_server"),
        ("import logging\nsetattr(logging, 'x', 1)\n", "setattr on module logging"),
        ("import logging\nlogging.root = None\n", "assigns logging.root"),
    ],
)
def test_the_check_finds_each_kind(tmp_path: Path, source: str, finding: str) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text(source)
    found = _findings([*SOURCES, probe])
    assert [f for f in found if f.startswith("probe.py:")] and any(finding in f for f in found), found


def _imported_packages(sources: list[Path]) -> set[str]:
    found: set[str] = set()
    for _path, tree in _trees(sources):
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                found.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found.add(node.module.split(".")[0])
    return {name for name in found if name not in sys.stdlib_module_names and name != OURS}


def test_every_imported_package_is_declared() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    extras = [r for group in project["optional-dependencies"].values() for r in group]
    requirements = [*project["dependencies"], *extras]
    declared = {re.split(r"[\s<>=!~;\[]", r, maxsplit=1)[0].lower().replace("_", "-") for r in requirements}
    distributions = packages_distributions()
    missing = {
        name: distributions.get(name)
        for name in _imported_packages(SOURCES)
        if not {d.lower().replace("_", "-") for d in distributions.get(name, [name])} & declared
    }
    assert missing == {}
