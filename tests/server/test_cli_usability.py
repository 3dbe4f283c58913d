"""The command as a new user meets it: global options before or after the
sub-command, ``--version``, help for a bare command and on every option, Markdown when piped
(or ``--format md``), ``diff`` never cropped, errors naming the flag as typed. (A terminal with no
text: ``test_cli_first_tries.py``, on a real pseudo-terminal.)"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from infinite_context_brain.server.cli.parser import build_parser

from ..conftest import run_cli, run_cli_process


def cli(store_url: str, project: Path, *args: str, stdin: str = "") -> tuple[int, str, str]:
    done = run_cli(store_url, *args, stdin=stdin.encode(), cwd=project)
    return done.returncode, done.stdout.decode(), done.stderr.decode()


def _parsers(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    found = [parser]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in dict.fromkeys(action.choices.values()):
                found += _parsers(child)
    return found


def test_every_option_and_argument_has_help_and_no_hidden_name_leaks() -> None:
    parser = build_parser()
    for p in _parsers(parser):
        for action in p._actions:
            if isinstance(action, argparse._SubParsersAction) or action.help == argparse.SUPPRESS:
                continue
            assert action.help, f"{p.prog}: {action.option_strings or action.dest} has no help"
        assert "==SUPPRESS==" not in p.format_help(), p.prog


def test_bare_command_and_bare_group_print_help(store_url: str, project_dir: Path) -> None:
    code, out, _ = cli(store_url, project_dir)
    assert code == 0 and "usage: infinite-context" in out and "checkpoint" in out
    code, out, _ = cli(store_url, project_dir, "memory")
    assert code == 0 and "usage: infinite-context memory" in out and "ACTION" in out


def test_version(store_url: str, project_dir: Path) -> None:
    done = run_cli_process(store_url, "--version", cwd=project_dir)
    assert done.returncode == 0
    assert done.stdout.decode().startswith("infinite-context ") and done.stdout.decode().strip()[-1].isdigit()


def test_global_options_before_or_after_the_subcommand(
    store_url: str, project_dir: Path, tmp_path: Path
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    assert (
        cli(store_url, elsewhere, "checkpoint", "-m", "Current task: A", "--project", str(project_dir))[0]
        == 0
    )
    for argv in (
        ("--json", "--project", str(project_dir), "status"),
        ("status", "--json", "--project", str(project_dir)),
        ("--project", str(project_dir), "status", "--format", "json"),
        ("--json", "status", "--project", str(project_dir)),
    ):
        code, out, err = cli(store_url, elsewhere, *argv)
        assert code == 0, err
        report = json.loads(out)
        assert report["version"] == 1 and report["project_root"] == str(project_dir), argv
    code, out, _ = cli(store_url, elsewhere, "memory", "list", "--json", "--project", str(project_dir))
    assert code == 0 and "items" in json.loads(out)


def test_piped_output_is_markdown_and_diff_is_never_cropped(store_url: str, project_dir: Path) -> None:
    long_task = "Current task: fix List<T> " + " ".join(f"word{i}" for i in range(60)) + " end"
    assert cli(store_url, project_dir, "checkpoint", "-m", long_task)[0] == 0
    assert cli(store_url, project_dir, "checkpoint", "-m", "Current task: B in src/app.py")[0] == 0

    code, out, _ = cli(store_url, project_dir, "resume")  # stdout is not a terminal here
    assert code == 0 and out.startswith("# Project context") and "B in src/app.py" in out
    assert not any(line.endswith(" ") for line in out.splitlines()), "padded rich text, not Markdown"
    assert cli(store_url, project_dir, "resume", "--format", "md")[1] == out

    code, out, _ = cli(store_url, project_dir, "history")
    assert code == 0 and out.startswith("| version |") and "fix List\\<T> word0" in out

    code, out, _ = cli(store_url, project_dir, "status")
    assert "1 recent change" in out or "recent changes" in out
    assert "1 active files" not in out

    fields = json.loads(cli(store_url, project_dir, "diff", "1", "2", "--json")[1])["fields"]
    task = next(f for f in fields if f["label"] == "task")
    assert len(task["before"]) > 200 and "word30" in task["before"] and task["after"] == "B in src/app.py"
    code, out, _ = cli(store_url, project_dir, "diff", "1", "2", "--format", "md")
    # COLUMNS is 80 here: the long value still comes out whole, on its line
    escaped = task["before"].replace("<", "\\<")
    assert f"- **task**: {escaped} -> B in src/app.py" in out.splitlines()
    code, out, _ = cli(store_url, project_dir, "diff", "1", "2", "--format", "text")
    assert f"task: {task['before']} -> B in src/app.py" in out.splitlines()  # not wrapped when piped
    code, out, _ = cli(store_url, project_dir, "diff", "1", "2")
    assert out.startswith("**Version 1 -> 2:**") and "word0 word1" in out


@pytest.mark.parametrize(
    ("argv", "flag"),
    [
        (("checkpoint", "-m", ""), "argument -m:"),
        (("checkpoint", "--message", "  "), "argument --message:"),
        (("rollback", "--steps", "9"), "argument --steps:"),
        (("checkpoint", "-m", "x", "--tokens", "-1"), "argument --tokens:"),
    ],
)
def test_errors_name_the_flag_as_typed(
    store_url: str, project_dir: Path, argv: tuple[str, ...], flag: str
) -> None:
    cli(store_url, project_dir, "checkpoint", "-m", "Current task: A")
    code, _, err = cli(store_url, project_dir, *argv)
    assert code == 2 and flag in err, err
    assert "token_count" not in err and "context:" not in err
