"""The wheel installs exactly one top-level package, the `infinite_context` namespace."""

from __future__ import annotations

import subprocess
import zipfile
from pathlib import Path

from .conftest import PYTHON, REPO


def test_wheel_has_only_the_infinite_context_namespace(tmp_path: Path) -> None:
    subprocess.run(
        [PYTHON, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(tmp_path), str(REPO)],
        check=True,
        capture_output=True,
    )
    (wheel,) = tmp_path.glob("*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    top = {n.split("/", 1)[0] for n in names if not n.split("/", 1)[0].endswith((".dist-info", ".data"))}
    assert top == {"infinite_context"}
    assert "infinite_context/__init__.py" not in names  # namespace package
    for part in ("core", "server", "notebook"):
        assert f"infinite_context/{part}/__init__.py" in names
    assert "infinite_context/server/mcp/instructions.md" in names
    entry_points = next(n for n in names if n.endswith("entry_points.txt"))
    assert (
        "infinite-context = infinite_context.server.launch:main"
        in zipfile.ZipFile(wheel).read(entry_points).decode()
    )
