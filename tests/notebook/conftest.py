"""Shared by the notebook tests: an in-process IPython shell with the magics loaded, and a
notebook run in a real Jupyter kernel (nbclient)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest
from IPython.core.interactiveshell import InteractiveShell
from nbclient import NotebookClient


@pytest.fixture
def shell(project_dir: Path, store_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[InteractiveShell]:
    """Terminal IPython (no kernel, no widgets) in the project folder, on this test's store."""
    monkeypatch.setenv("INFINITE_CONTEXT_STORE_URL", store_url)
    monkeypatch.chdir(project_dir)
    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "infinite_context_brain.notebook")
    yield ip
    ip.run_line_magic("unload_ext", "infinite_context_brain.notebook")
    InteractiveShell.clear_instance()


def run_notebook(cells: list[str], project_dir: Path) -> list[list[dict[str, Any]]]:
    """Run ``cells`` as a notebook in ``project_dir`` in a real kernel; each cell's outputs."""
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(src) for src in cells])
    client = NotebookClient(
        nb,
        kernel_name="python3",
        timeout=120,
        allow_errors=True,
        resources={"metadata": {"path": str(project_dir)}},
    )
    client.execute()
    return [[dict(o) for o in cell.outputs] for cell in nb.cells]
