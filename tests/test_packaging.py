"""The wheel installs exactly one top-level package, the `infinite_context_brain` namespace."""

from __future__ import annotations

import re
import subprocess
import tomllib
import zipfile
from pathlib import Path

from infinite_context_brain.core import DISTRIBUTION, install_command

from .conftest import PYTHON, REPO


def test_wheel_has_only_the_infinite_context_brain_namespace(tmp_path: Path) -> None:
    subprocess.run(
        [PYTHON, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(tmp_path), str(REPO)],
        check=True,
        capture_output=True,
    )
    (wheel,) = tmp_path.glob("*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    top = {n.split("/", 1)[0] for n in names if not n.split("/", 1)[0].endswith((".dist-info", ".data"))}
    assert top == {"infinite_context_brain"}
    assert "infinite_context_brain/__init__.py" not in names  # namespace package
    for part in ("core", "server", "notebook"):
        assert f"infinite_context_brain/{part}/__init__.py" in names
    assert "infinite_context_brain/server/mcp/instructions.md" in names
    entry_points = next(n for n in names if n.endswith("entry_points.txt"))
    assert (
        "infinite-context = infinite_context_brain.server.launch:main"
        in zipfile.ZipFile(wheel).read(entry_points).decode()
    )


#: where a user reads an install hint: docs, the product's messages, the extension's buttons
_HINT_SOURCES = ("README.md", "extension/README.md", "extension/src", "shared", "server", "notebook", "docs")
_INSTALL = re.compile(r"\b(?:pipx?|uv pip|uv tool) install\s+((?:-[\w-]+\s+)*)(['\"]?)([\w.\[\]-]+)")


def test_every_install_hint_names_our_distribution() -> None:
    """`pip install infinite-context` installs an unrelated project: every hint a user can follow
    names ``DISTRIBUTION`` (or a local checkout), and the name is the one the wheel is built as."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["name"] == DISTRIBUTION
    assert install_command() == f"pip install {DISTRIBUTION}"
    assert install_command("pipx") == f"pipx install {DISTRIBUTION}"
    wrong: list[str] = []
    for source in _HINT_SOURCES:
        root = REPO / source
        files = (
            [root] if root.is_file() else [p for p in root.rglob("*") if p.is_file()] if root.exists() else []
        )
        for path in files:
            if path.suffix not in {".md", ".py", ".ts", ".json", ".txt"} or "node_modules" in path.parts:
                continue
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                for match in _INSTALL.finditer(line):
                    name = match.group(3).split("[", 1)[0]
                    if name in {".", "-e", "-U"} or name.startswith((".", "/", "$", "{")):
                        continue  # a local checkout, or a name filled in from DISTRIBUTION
                    if name != DISTRIBUTION:
                        wrong.append(f"{path.relative_to(REPO)}:{number}: {match.group(0)}")
    assert not wrong, "install hints naming another package:\n" + "\n".join(wrong)
    extension = (REPO / "extension" / "src" / "status.ts").read_text(encoding="utf-8")
    assert f'export const DISTRIBUTION = "{DISTRIBUTION}";' in extension
