"""What the magics put in a notebook, read from a real kernel's outputs (nbclient, no
JupyterLab): every display carries ``text/plain`` plus ``text/markdown`` or ``text/html``, never a
Python repr; ``<T>`` stays literal; ``-m`` is split like a shell argument; the ``%ctx_status``
rollback asks first, refreshes, disables the current version and shows a failure's reason,
driven by clicking its buttons in the kernel and reading the widgets' state. Terminal IPython
(no kernel, no widgets) gets plain text."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from html import unescape
from pathlib import Path
from typing import Any

import nbformat
import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell
from nbclient import NotebookClient

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
    assert "text/markdown" in resume and "List\\<T> parsing" in resume["text/markdown"]
    assert "List<T> parsing" in resume["text/plain"]
    assert len(_displays(out[4])) == 1 and 'TYPE ProjectState 2 plot "the rows"' in _stdout(out[4])
    assert len(_displays(out[5])) == 1 and "List\\<T>" in _displays(out[5])[0]["text/markdown"]

    (history,) = _displays(out[6])
    assert (
        "fix List\\<T> parsing" in history["text/markdown"] and "fix List<T> parsing" in history["text/plain"]
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


def _rendered_lines(markdown: str) -> list[str]:
    """The lines a reader sees when ``markdown`` is rendered (markdown-it, as VS Code's notebook
    Markdown renderer; ``<br>`` and block ends are line ends)."""
    from markdown_it import MarkdownIt

    html = MarkdownIt("commonmark").render(markdown).replace("\n", " ")  # soft breaks: spaces
    text = re.sub(r"<br\s*/?>|</(p|li|h\d)>", "\n", html)
    return [unescape(re.sub(r"<[^>]+>", "", line)).strip() for line in text.splitlines() if line.strip()]


@pytest.mark.slow
def test_resume_keeps_its_lines_and_a_saved_notebook_keeps_no_local_path(
    project_dir: Path, store_url: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("INFINITE_CONTEXT_STORE_URL", store_url)
    cells = [
        "%load_ext infinite_context_brain.notebook",
        "rows = list(range(3))\nprint(len(rows))",
        '%checkpoint -m "Current task: parse List<T> in src/app.py"',
        "rows.append(4)",
        '%checkpoint -m "Done: the parser. Current task: tests for Map<K, V>"',
        "%resume",
        "%ctx_status",
        "%ctx_history",
        "%rollback --version 1",
        "%ctx_status",
    ]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(src) for src in cells])
    NotebookClient(
        nb, kernel_name="python3", timeout=120, resources={"metadata": {"path": str(project_dir)}}
    ).execute()

    (resume,) = _displays([dict(o) for o in nb.cells[5].outputs])
    lines = _rendered_lines(resume["text/markdown"])
    # each line of the work section (Task, the last step, what came before...) stays a line of
    # its own when rendered, not run into one paragraph
    plain = resume["text/plain"].split("## Current work\n", 1)[1].split("\n## ", 1)[0]
    written = [line.replace("**", "").replace("`", "").strip() for line in plain.splitlines() if line.strip()]
    assert len(written) >= 3 and "Task: tests for Map<K, V>" in written, written
    for line in written:
        assert line in lines, (line, lines)

    saved = nbformat.writes(nb)
    assert nb.metadata.get("widgets"), "the panel's widget state is saved with the notebook"
    for local in {str(tmp_path), str(project_dir), str(Path.home()) + "/", store_url}:
        assert local not in saved, (local, [line for line in saved.splitlines() if local in line][:5])
    assert "Project project · store sqlite://…/brain.db" in saved

    # the panel after the rollback: its header's time is the new top row's
    panel = next(d for d in _displays([dict(o) for o in nb.cells[9].outputs]) if "text/plain" in d)
    plain = panel["text/plain"].splitlines()
    header_time = re.search(r"last checkpoint (.+ UTC)", panel["text/plain"])
    top = next(line for line in plain if line.strip().startswith("v3 ·"))
    assert header_time is not None and header_time.group(1) in top and "rollback:v1" in top, plain


def test_terminal_ipython_shows_resume_once_and_no_empty_out(project_dir: Path, store_url: str) -> None:
    """Real terminal IPython (``ipython`` reading cells from a pipe)."""
    cells = [
        "%load_ext infinite_context_brain.notebook",
        '%checkpoint -m "Current task: parse List<T> in src/app.py"',
        "%resume",
        "x = %resume",
        "print('VERSION', x.meta.version)",
    ]
    env = {
        **os.environ,
        "INFINITE_CONTEXT_STORE_URL": store_url,
        "IPYTHONDIR": str(project_dir.parent / "ipy"),
    }
    done = subprocess.run(
        [
            str(Path(sys.executable).with_name("ipython")),
            "--simple-prompt",
            "--no-banner",
            "--colors=NoColor",
        ],
        input="\n".join(cells) + "\n",
        capture_output=True,
        text=True,
        cwd=project_dir,
        env=env,
        timeout=120,
    )
    out = done.stdout
    assert not re.search(r"Out\[\d+\]: *\n", out), out
    assert re.search(r"Out\[3\]: # Project context", out), out  # the bare %resume is the cell's value
    assert out.count("**Task:** parse List<T> in src/app.py") == 2, out  # and `x = %resume` shows it once
    assert "VERSION 1" in out and "ResumedState(" not in out and "&lt;" not in out
    assert str(project_dir) not in out, out
