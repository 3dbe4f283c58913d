"""Where a command's text comes from (``checkpoint``, ``memory store``): the words given
(``TEXT``), ``-m TEXT``, ``--file F``, or stdin (``-``, or a pipe when none of them is given).

One source at a time. On a terminal with no text, the command stops with what to type instead
of waiting for input nobody knows is wanted; ``-`` asks for the terminal explicitly and says so.
The source used is recorded (``args.text_source``) so an error about the text (empty, too long)
names it the way it was given: ``-m``, ``--file``, ``TEXT`` or ``stdin``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from infinite_context_brain.core.errors import InvalidInput

#: each source's name in messages
NAMES = {"text": "TEXT", "message": "-m", "file": "--file", "stdin": "- (stdin)"}


def read_text(args: argparse.Namespace, what: str, example: str) -> str:
    """The text from the one source given; ``what`` and ``example`` word the error for a
    terminal with none (``the context``, ``infinite-context checkpoint "Done: ..."``)."""
    words: list[str] = args.text or []
    given = [
        name
        for name, present in (
            ("text", bool(words) and words != ["-"]),
            ("stdin", words == ["-"]),
            ("message", args.message is not None),
            ("file", args.file is not None),
        )
        if present
    ]
    if len(given) > 1:
        raise InvalidInput(
            given[1],
            f"cannot be used with {NAMES[given[0]]}",
            fix=f"give {what} one way: TEXT, -m TEXT, --file F, or a pipe",
        )
    source = given[0] if given else "stdin"
    args.text_source = source
    if source == "text":
        return " ".join(words)
    if source == "message":
        return str(args.message)
    if source == "file":
        return _read_file(str(args.file))
    if sys.stdin.isatty():
        if not given:  # nothing given and nothing piped: say what to do rather than wait
            raise InvalidInput(
                "text",
                f"{what} is missing (none given, and stdin is a terminal, not a pipe)",
                fix=f"pass it as TEXT ({example}), -m TEXT or --file F, or pipe it in",
            )
        sys.stderr.write(f"Reading {what} from the terminal: type it, then Ctrl-D.\n")
    return sys.stdin.read()


def _read_file(name: str) -> str:
    try:
        return Path(name).read_text(encoding="utf-8")
    except OSError as exc:
        raise InvalidInput(
            "file", f"cannot read {name}: {exc.strerror}", fix="pass a readable file"
        ) from None
    except UnicodeDecodeError:
        raise InvalidInput("file", f"{name} is not UTF-8 text", fix="pass a text file") from None
