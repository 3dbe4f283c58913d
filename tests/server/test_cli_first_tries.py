"""What people type first, as the console script runs it: the text as words
(``checkpoint "Done: fixed the bug"``), text piped in without ``-``, an empty pipe named as a
pipe, a terminal with no text stopped with what to type (a real pseudo-terminal, never a wait),
text given two ways refused, a typo'd flag named with the closest one on every sub-command."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest

from infinite_context_brain.server.cli.parser import Parser, build_parser, unknown_message

from ..conftest import cli_env, run_cli, run_cli_process

SCRIPT = Path(sys.executable).with_name("infinite-context")


def real(store_url: str, project: Path, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    """The command as a process (``python -m``, the console script's module), in ``project``."""
    done = run_cli_process(store_url, *args, stdin=stdin.encode(), cwd=project)
    return subprocess.CompletedProcess(done.args, done.returncode, done.stdout.decode(), done.stderr.decode())


def here(store_url: str, project: Path, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    """The same command line through ``main(argv)`` in this process (the same parser, faster)."""
    done = run_cli(store_url, *args, stdin=stdin.encode(), cwd=project)
    return subprocess.CompletedProcess(done.args, done.returncode, done.stdout.decode(), done.stderr.decode())


def status(store_url: str, project: Path) -> dict[str, object]:
    done = here(store_url, project, "--json", "status")
    assert done.returncode == 0, done.stderr
    report: dict[str, object] = json.loads(done.stdout)
    return report


def test_checkpoint_and_memory_store_take_their_text_as_words(store_url: str, project_dir: Path) -> None:
    done = real(store_url, project_dir, "checkpoint", "Current task: fix the login bug")
    assert done.returncode == 0, done.stderr
    assert "Checkpoint saved as version 1" in done.stdout
    # Unquoted words are one text, as `echo` would take them.
    done = real(store_url, project_dir, "checkpoint", "Current", "task:", "write", "the", "docs")
    assert done.returncode == 0, done.stderr
    assert status(store_url, project_dir)["current_task"] == "write the docs"

    stored = real(store_url, project_dir, "--json", "memory", "store", "Error: redis timed out", "--pin")
    assert stored.returncode == 0, stored.stderr
    item = json.loads(stored.stdout)["item"]
    assert item["content"] == "Error: redis timed out" and item["pinned"] is True


def test_piped_text_is_read_without_a_dash(store_url: str, project_dir: Path) -> None:
    done = real(store_url, project_dir, "checkpoint", stdin="Current task: piped in from a script\n")
    assert done.returncode == 0, done.stderr
    assert status(store_url, project_dir)["current_task"] == "piped in from a script"
    stored = real(store_url, project_dir, "memory", "store", stdin="We decided to go with getUserById")
    assert stored.returncode == 0, stored.stderr
    hits = json.loads(here(store_url, project_dir, "--json", "memory", "query", "getUserById").stdout)
    assert hits["items"] and "getUserById" in hits["items"][0]["item"]["content"]


@pytest.mark.parametrize("argv", [("checkpoint",), ("checkpoint", "-"), ("memory", "store")])
def test_an_empty_pipe_is_named_as_the_pipe_not_as_a_flag(
    store_url: str, project_dir: Path, argv: tuple[str, ...]
) -> None:
    done = real(store_url, project_dir, *argv, stdin="")  # `... < /dev/null`
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith("error: the text piped in (stdin): is empty"), done.stderr
    assert "-m" not in done.stderr and "--message" not in done.stderr
    assert status(store_url, project_dir)["has_state"] is False


@pytest.mark.parametrize(
    ("argv", "named"),
    [
        (("checkpoint", "Current task: A", "-m", "Current task: B"), "argument -m: cannot be used with TEXT"),
        (("checkpoint", "--message", "A", "--file", "notes.md"), "argument --file: cannot be used with -m"),
        (("checkpoint", "-", "-m", "A"), "argument -m: cannot be used with - (stdin)"),
        (("memory", "store", "Error: x", "--message", "y"), "argument --message: cannot be used with TEXT"),
    ],
)
def test_text_given_two_ways_is_refused_by_name(
    store_url: str, project_dir: Path, argv: tuple[str, ...], named: str
) -> None:
    (project_dir / "notes.md").write_text("Current task: from the file")
    done = here(store_url, project_dir, *argv)
    assert done.returncode == 2 and named in done.stderr, done.stderr
    assert "fix: give" in done.stderr and "one way" in done.stderr
    assert status(store_url, project_dir)["has_state"] is False


def test_an_empty_text_is_named_the_way_it_was_given(store_url: str, project_dir: Path) -> None:
    empty = project_dir / "empty.md"
    empty.write_text("  \n")
    for argv, named in (
        (("checkpoint", ""), "argument TEXT: is empty"),
        (("checkpoint", "-m", " "), "argument -m: is empty"),
        (("checkpoint", "--file", str(empty)), "argument --file: is empty"),
        (("memory", "store", "--message="), "argument --message: is empty"),
    ):
        done = here(store_url, project_dir, *argv)
        assert done.returncode == 2 and done.stderr.startswith(f"error: {named}"), (argv, done.stderr)


def _on_a_terminal(store_url: str, project: Path, *args: str, typed: bytes | None = None) -> tuple[int, str]:
    """The console script with a pseudo-terminal as stdin (as in an interactive shell); ``typed``
    is written to the terminal once the command asks for it. Returns the exit status and stderr."""
    controller, terminal = pty.openpty()
    try:
        process = subprocess.Popen(
            [str(SCRIPT), *args],
            stdin=terminal,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=cli_env(store_url),
            cwd=project,
        )
        os.close(terminal)
        if typed is not None:
            assert process.stderr is not None
            prompt = process.stderr.readline()  # it says it reads the terminal before it waits
            assert b"from the terminal: type it, then Ctrl-D" in prompt, prompt
            os.write(controller, typed)
        try:
            _out, err = process.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            raise AssertionError(f"`{' '.join(args)}` waited on the terminal") from None
        return process.returncode, (prompt.decode() if typed is not None else "") + err.decode()
    finally:
        os.close(controller)


def test_a_terminal_with_no_text_gets_what_to_type_not_a_wait(store_url: str, project_dir: Path) -> None:
    code, err = _on_a_terminal(store_url, project_dir, "checkpoint")
    assert code == 2, err
    assert "argument TEXT: the context is missing (none given, and stdin is a terminal" in err
    assert 'infinite-context checkpoint "Done: fixed the bug"' in err
    code, err = _on_a_terminal(store_url, project_dir, "memory", "store", "--importance", "8")
    assert code == 2 and "the text to remember is missing" in err, err
    assert status(store_url, project_dir)["has_state"] is False

    # `-` asks for the terminal: it says so, then reads up to Ctrl-D.
    code, err = _on_a_terminal(
        store_url, project_dir, "checkpoint", "-", typed=b"Current task: typed at the terminal\n\x04"
    )
    assert code == 0, err
    assert status(store_url, project_dir)["current_task"] == "typed at the terminal"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (("checkpoint", "--mesage", "Done: x"), "unknown flag --mesage; did you mean --message?"),
        (("checkpoint", "--mesage=Done: x"), "unknown flag --mesage; did you mean --message?"),
        (("checkpoint", "Done: x", "--tokesn", "5"), "unknown flag --tokesn; did you mean --tokens?"),
        (("history", "--limt", "3"), "unknown flag --limt; did you mean --limit?"),
        (("rollback", "--stpes", "2"), "unknown flag --stpes; did you mean --steps?"),
        (("diff", "1", "2", "--jsno"), "unknown flag --jsno; did you mean --json?"),
        (("memory", "store", "--tags", "db", "Error: x"), "unknown flag --tags; did you mean --tag?"),
        (("memory", "query", "redis", "--archvied"), "unknown flag --archvied; did you mean --archived?"),
        (("transcript", "stats", "--plto", "c.png"), "unknown flag --plto; did you mean --plot?"),
        (("proxy", "start", "--prot", "9000"), "unknown flag --prot; did you mean --port?"),
        (("status", "--limit", "3"), "unknown flag --limit; see --help for the flags it takes"),
        (("status", "now"), "unexpected argument: now"),
    ],
)
def test_an_unknown_flag_is_named_with_the_closest_one(
    store_url: str, project_dir: Path, argv: tuple[str, ...], message: str
) -> None:
    done = here(store_url, project_dir, *argv)
    assert done.returncode == 2 and done.stdout == ""
    # argparse's usage line for the sub-command it was given to, then the message
    assert f"usage: infinite-context {argv[0]}" in done.stderr
    assert done.stderr.rstrip().endswith(message), done.stderr
    assert status(store_url, project_dir)["has_state"] is False  # nothing ran


def test_the_console_script_names_a_typo(store_url: str, project_dir: Path) -> None:
    done = subprocess.run(
        [str(SCRIPT), "checkpoint", "--mesage", "Done: fixed the bug"],
        env=cli_env(store_url),
        cwd=project_dir,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and "unknown flag --mesage; did you mean --message?" in done.stderr


def _parsers(parser: Parser) -> list[Parser]:
    found = [parser]
    if parser.commands is not None:
        for child in dict.fromkeys(parser.commands.choices.values()):
            found += _parsers(child)
    return found


def test_every_long_flag_of_every_sub_command_is_suggested_for_its_typo() -> None:
    """A letter dropped from any long flag (``--mesage``) is matched back to that flag among the
    flags of its own sub-command."""
    checked = 0
    for parser in _parsers(build_parser()):
        for flag in parser.flags:
            if not flag.startswith("--") or len(flag) < 6:
                continue
            typo = flag[:4] + flag[5:]  # --message -> --mesage-style: one letter out
            assert unknown_message([typo], parser.flags) == f"unknown flag {typo}; did you mean {flag}?", (
                parser.prog,
                flag,
            )
            checked += 1
    assert checked > 40
