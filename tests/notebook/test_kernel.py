"""A real Jupyter kernel (nbclient) runs a notebook that uses the magics; the CLI then sees the
same brain, because the notebook's folder resolves to the same project."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ..conftest import run_cli
from .conftest import run_notebook

WIDGET_MIME = "application/vnd.jupyter.widget-view+json"

pytestmark = pytest.mark.slow  # starts a real kernel


def test_notebook_session_shares_the_brain_with_the_cli(
    project_dir: Path, store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("INFINITE_CONTEXT_STORE_URL", store_url)
    cells = [
        "%load_ext infinite_context_brain.notebook",
        "import json\nrows = [{'id': i} for i in range(10)]\nprint('rows', len(rows))",
        "%checkpoint -m Current task: load the rows in src/app.py",
        "%%checkpoint\nDone: loaded the rows. Current task: plot them\nDecided: use matplotlib",
        "state = %resume\nprint('VERSION', state.meta.version)",
        "%ctx_status",
        "%rollback --steps 1",
        "%checkpoint --tokens nope",
    ]
    outputs = run_notebook(cells, project_dir)

    def text(i: int) -> str:
        return "".join(
            str(o.get("text", "")) + json.dumps(o.get("data", {}), ensure_ascii=False) for o in outputs[i]
        )

    assert "✔ checkpoint **v1**" in text(2) and "merged by offline" in text(2)
    assert "✔ checkpoint **v2**" in text(3)
    assert "VERSION 2" in text(4) and "plot them" in text(4)
    assert any(WIDGET_MIME in o.get("data", {}) for o in outputs[5])
    assert "restored v1 as v3" in text(6)
    assert "UsageError" in text(7) or any(o.get("ename") == "UsageError" for o in outputs[7])

    status = run_cli(store_url, "--json", "status", cwd=project_dir)
    assert status.returncode == 0, status.stderr
    report = json.loads(status.stdout)
    assert report["version"] == 3 and report["history_versions"] == [1, 2, 3]
    assert report["current_task"] == "load the rows in src/app.py"
