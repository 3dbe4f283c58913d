"""What the magics put in a notebook (issue 18), read from a real kernel's outputs (nbclient, no
JupyterLab): every display carries ``text/plain`` plus ``text/markdown`` or ``text/html``, never a
Python repr; ``<T>`` stays literal; ``-m`` is split like a shell argument; the ``%ctx_status``
rollback asks first, refreshes, disables the current version and shows a failure's reason,
driven by clicking its buttons in the kernel and reading the widgets' state. Terminal IPython
(no kernel, no widgets) gets plain text."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell

from .conftest import run_notebook

WIDGET_MIME = "application/vnd.jupyter.widget-view+json"

PANEL_FLOW = """
from infinite_context_brain.notebook import _MAGICS
p = _MAGICS.panel
current = p.history[0].version
print("CURRENT", current, p.buttons[current].disabled, p.buttons[current].description)
p.buttons[1].click()
print("ASKED", p.pending, p.confirm_box.layout.display, "Restore v1?" in p.question.value)
print("STILL", p.brain.status().version)
p.restore.click()
top = p.history[0]
print("AFTER", p.brain.status().version, top.version, top.merged_by)
print("DISABLED", p.buttons[top.version].disabled, p.buttons[1].disabled, p.buttons[2].disabled)
print("MESSAGE", p.message.value)
p.buttons[2].click()
p.cancel_button.click()
print("CANCELLED", p.pending, p.confirm_box.layout.display, p.brain.status().version)
p.ask(999)
p.confirm()
print("FAILED", p.message.value)
"""


def _stdout(outputs: list[dict[str, Any]]) -> str:
    return "".join(str(o.get("text", "")) for o in outputs if o["output_type"] == "stream")


def _displays(outputs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        o["data"]
        for o in outputs
        if o["output_type"] in ("display_data", "execute_result", "update_display_data")
    ]


def _assert_no_repr(outputs: list[dict[str, Any]]) -> None:
    text = json.dumps(outputs, ensure_ascii=False)
    for repr_start in ("ProjectState(", "ResumedState(", "VBox(", "<IPython.core.display", "HBox("):
        assert repr_start not in text, (repr_start, text[:2000])


@pytest.mark.slow
def test_notebook_outputs_have_fallbacks_and_the_rollback_asks_first(
    project_dir: Path, store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("INFINITE_CONTEXT_STORE_URL", store_url)
    cells = [
        "%load_ext infinite_context_brain.notebook",
        '%checkpoint -m "Current task: fix List<T> parsing in src/app.py"',
        "%checkpoint -m 'Done: parsing. Current task: plot \"the rows\"'",
        "%resume",
        "x = %resume\nprint('TYPE', type(x).__mro__[1].__name__, x.meta.version,"
        " x.active_context.current_task)",
        "x",
        "%ctx_history",
        "%ctx_status",
        PANEL_FLOW,
        '%checkpoint -m "not closed',
    ]
    out = run_notebook(cells, project_dir)
    for cell in out:
        _assert_no_repr(cell)
        for data in _displays(cell):
            assert "text/plain" in data, data
            assert {"text/markdown", "text/html", WIDGET_MIME} & set(data), data

    assert "✔ checkpoint **v1**" in json.dumps(out[1], ensure_ascii=False)
    (resume,) = _displays(out[3])  # shown once, and no Out[] repr after it
    assert "text/markdown" in resume and "List&lt;T&gt; parsing" in resume["text/markdown"]
    assert "List<T> parsing" in resume["text/plain"]
    assert len(_displays(out[4])) == 1 and 'TYPE ProjectState 2 plot "the rows"' in _stdout(out[4])
    assert len(_displays(out[5])) == 1 and "List&lt;T&gt;" in _displays(out[5])[0]["text/markdown"]

    (history,) = _displays(out[6])
    assert (
        "fix List\\<T\\> parsing" in history["text/markdown"]
        and "fix List<T> parsing" in history["text/plain"]
    )

    (panel,) = _displays(out[7])
    assert WIDGET_MIME in panel and "text/html" in panel
    assert "List&lt;T&gt;" in panel["text/html"] and "fix List<T> parsing" in panel["text/plain"]

    flow = _stdout(out[8])
    assert "CURRENT 2 True current" in flow
    assert "ASKED 1 flex True" in flow and "STILL 2" in flow  # asked, nothing written yet
    assert "AFTER 3 3 rollback:v1" in flow  # refreshed from the store
    assert "DISABLED True True False" in flow  # current, and the version it copies
    assert "restored v1 as v3" in flow
    assert "CANCELLED None none 3" in flow
    assert "FAILED" in flow and "version 999 is not in the history" in flow and "fix:" in flow
    assert "UsageError: no closing quotation" in json.dumps(out[9]), out[9]


def test_terminal_ipython_gets_plain_text(
    shell: InteractiveShell, capsys: pytest.CaptureFixture[str]
) -> None:
    shell.run_line_magic("checkpoint", '-m "Current task: fix List<T> parsing"')
    capsys.readouterr()
    for cell in ("%resume", "%ctx_status", "%ctx_history"):
        shell.run_cell(cell, store_history=True)
    text = capsys.readouterr().out
    assert "fix List<T> parsing" in text and "Version 1" in text and "v1" in text
    for leak in ("VBox(", "<IPython.core.display", "ProjectState(", "&lt;", "<div>"):
        assert leak not in text, (leak, text)
    with pytest.raises(UsageError, match="no closing quotation"):
        shell.run_line_magic("checkpoint", '-m "unclosed')
