"""The magics in an in-process IPython shell: arguments, --auto, redaction, big outputs, errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell

from infinite_context_brain.core.brain import ProjectBrain
from infinite_context_brain.core.config import load_settings


def brain_state(project_dir: Path, store_url: str) -> dict[str, object]:
    with ProjectBrain.open(settings=load_settings(store_url=store_url, project_root=project_dir)) as brain:
        state = brain.resume().state
        return {} if state is None else json.loads(state.model_dump_json())


def test_checkpoint_gathers_cells_outputs_errors_and_variables(
    shell: InteractiveShell, project_dir: Path, store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    shell.run_cell("import math\nrows = [1, 2, 3]\nprint('loaded', len(rows), 'rows')", store_history=True)
    shell.run_cell("token = 'sk-ant-api03-" + "x" * 40 + "'\nprint(token)", store_history=True)
    shell.run_cell("big = 'y' * 100_000\nbig", store_history=True)
    shell.run_cell("d = 0", store_history=True)
    shell.run_cell("total = 10 / d", store_history=True)
    recorder = shell.magics_manager.registry["ContextMagics"].recorder
    facts = recorder.facts(shell.user_ns, str(project_dir))
    assert [f.check for f in facts.failures] == ["total = 10 / d"]
    assert "ZeroDivisionError: division by zero" in facts.failures[0].lines[0]
    assert "rows: list len 3" in facts.variables and "big: str len 100000" in facts.variables
    assert not any(v.startswith("math") for v in facts.variables)  # modules are not variables
    assert len(facts.model_dump_json()) < 10_000  # the 100 KB output was trimmed

    shell.run_line_magic("checkpoint", '-m "Current task: clean the rows in src/app.py"')
    state = brain_state(project_dir, store_url)
    dumped = json.dumps(state)
    ac = state["active_context"]
    assert state["meta"]["version"] == 1  # type: ignore[index]
    assert ac["current_task"] == "clean the rows in src/app.py"  # type: ignore[index]  # no quotes
    assert ac["blockers"][0]["check"] == "total = 10 / d"  # type: ignore[index]
    assert "ZeroDivisionError" in ac["blockers"][0]["detail"]  # type: ignore[index]
    assert "rows: list len 3" in ac["variables"]  # type: ignore[index]
    assert "sk-ant-api03-xxxx" not in dumped  # the secret in a cell never reaches the store
    assert not recorder.cells  # the next checkpoint starts fresh

    shell.run_cell("d = 4", store_history=True)
    shell.run_cell("total = 10 / d", store_history=True)  # the same cell, now passing
    shell.run_line_magic("checkpoint", "")
    state = brain_state(project_dir, store_url)
    assert state["active_context"]["blockers"] == []  # type: ignore[index]
    assert "total = 10 / d" in state["project_context"]["recent_changes"][-1]["summary"]  # type: ignore[index]
    resume = shell.run_line_magic("resume", "")
    assert resume is not None and "d: int" in resume.active_context.variables


def test_cell_magic_resume_history_and_rollback(
    shell: InteractiveShell, project_dir: Path, store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    shell.run_cell_magic("checkpoint", "", "Current task: first thing\nDecided: use parquet")
    shell.run_cell_magic("checkpoint", "", "Done: first thing. Current task: second thing")
    state = shell.run_line_magic("resume", "")
    assert state is not None and state.meta.version == 2
    shell.run_line_magic("ctx_history", "")
    shell.run_line_magic("rollback", "--version 1")
    assert "restored v1 as v3" in capsys.readouterr().out
    assert brain_state(project_dir, store_url)["active_context"]["current_task"] == "first thing"  # type: ignore[index]
    shell.run_line_magic("ctx_status", "")  # no widget front end here: plain text
    assert "Version 3" in capsys.readouterr().out


def test_bad_arguments_raise_usage_errors(shell: InteractiveShell) -> None:
    with pytest.raises(UsageError):
        shell.run_line_magic("checkpoint", "--tokens -5")
    with pytest.raises(UsageError):
        shell.run_line_magic("checkpoint", "--tokens many")
    with pytest.raises(UsageError):
        shell.run_line_magic("checkpoint", "--auto 0")
    with pytest.raises(UsageError):
        shell.run_line_magic("rollback", "--steps 1 --version 2")
    with pytest.raises(UsageError):
        shell.run_cell_magic("checkpoint", "", "   ")
    with pytest.raises(UsageError):
        shell.run_line_magic("ctx_history", "--limit 0")


def test_auto_checkpoints_every_n_cells_and_stops(
    shell: InteractiveShell, project_dir: Path, store_url: str
) -> None:
    shell.run_line_magic("checkpoint", "--auto 2")
    for i in range(5):
        shell.run_cell(f"x{i} = {i}", store_history=True)
    assert brain_state(project_dir, store_url)["meta"]["version"] == 2  # type: ignore[index]
    shell.run_line_magic("checkpoint", "--auto off")
    for i in range(4):
        shell.run_cell(f"y{i} = {i}", store_history=True)
    assert brain_state(project_dir, store_url)["meta"]["version"] == 2  # type: ignore[index]


def test_store_errors_are_shown_and_the_kernel_keeps_working(
    shell: InteractiveShell,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    blocked = tmp_path / "a-file"
    blocked.write_text("")
    monkeypatch.setenv("INFINITE_CONTEXT_STORE_URL", f"sqlite:///{blocked}/brain.db")
    assert shell.run_line_magic("checkpoint", "-m Done: x") is None
    assert "infinite-context:" in capsys.readouterr().err
    result = shell.run_cell("2 + 2")
    assert result.result == 4
    shell.run_line_magic("rollback", "--version 99")  # also a message, not a traceback
    assert "infinite-context:" in capsys.readouterr().err


def test_a_line_past_the_text_limit_is_refused_before_it_is_split(
    shell: InteractiveShell,
    project_dir: Path,
    store_url: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Splitting a line like a shell takes time growing with the square of its length (minutes
    for a few MB), so %checkpoint names -m and the limit before it splits anything."""
    monkeypatch.setenv("INFINITE_CONTEXT_MAX_CONTEXT_CHARS", "1000")
    line = '-m "' + "raw output " * 500 + '"'
    assert shell.run_line_magic("checkpoint", line) is None
    err = capsys.readouterr().err
    assert f"-m: is {len(line):,} characters, over the limit of 1,000" in err
    assert "INFINITE_CONTEXT_MAX_CONTEXT_CHARS" in err
    assert brain_state(project_dir, store_url) == {}  # nothing stored
    shell.run_line_magic("checkpoint", '-m "Current task: a short note"')
    assert brain_state(project_dir, store_url)["meta"]["version"] == 1  # type: ignore[index]
