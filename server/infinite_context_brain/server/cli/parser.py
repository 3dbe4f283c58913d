"""The ``infinite-context`` command line: sub-commands, flags and their help (argparse only,
so building it costs nothing at start-up). Numeric and id flags follow the shared argument rules
(``core.params``, through ``core.flags.Flag``, loaded only when such a flag is given).

The global options (``--project``, ``--json``, ``--format``) are accepted before or after the
sub-command (``status --json`` as well as ``--json status``): ``finish`` adds them to every
sub-command, including ones added later, with ``SUPPRESS`` defaults so a value given before the
sub-command is not reset. A command given without its sub-command prints its help.

``Parser.parse`` names an unknown flag with the closest one the sub-command has (``unknown flag
--mesage; did you mean --message?``), as git and cargo do; argparse before Python 3.14 only
says "unrecognized arguments", at the top level, whichever sub-command was meant.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Sequence
from typing import Any, cast

from infinite_context_brain.core.flags import HISTORY_LIMIT_DEFAULT, Flag

from ..claude_code.events import EVENTS

FORMATS = ("text", "md", "json")
#: ``--name=value``: a flag however its value is spelled
FLAG_WITH_VALUE = re.compile(r"--[A-Za-z][\w-]*=")


class Parser(argparse.ArgumentParser):
    """An ``ArgumentParser`` that knows its own flags and sub-commands (so an unknown flag can
    be matched against them), recorded as they are added."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        #: every option string of this parser (``-m``, ``--message``...; ``-h`` is added by
        #: argparse's own ``__init__``, hence first)
        self.flags: list[str] = []
        #: the sub-commands' action, when this parser has sub-commands (set by ``commands``)
        self.commands: argparse._SubParsersAction[Parser] | None = None
        super().__init__(*args, **kwargs)

    def add_argument(self, *name_or_flags: str, **kwargs: Any) -> argparse.Action:
        action = super().add_argument(*name_or_flags, **kwargs)
        self.flags += action.option_strings
        return action

    def parse(self, argv: Sequence[str]) -> argparse.Namespace:
        """``parse_args``, but anything left over is named by the sub-command it was given to:
        an unknown flag with the closest known one, a stray word as unexpected."""
        args, extras = self.parse_known_args(argv)
        where = cast(Parser, getattr(args, "flag_parser", self))
        # argparse takes `--mesage=Done: x` (a space in it) for a word of TEXT: it is a flag.
        words = getattr(args, "text", None) or []
        extras += [w for w in words if FLAG_WITH_VALUE.match(w) and w.split("=", 1)[0] not in where.flags]
        if extras:
            where.error(unknown_message(extras, where.flags))
        return args


def unknown_message(extras: Sequence[str], flags: Sequence[str]) -> str:
    """``unknown flag --mesage; did you mean --message?`` for the first flag argparse could not
    place, else ``unexpected argument: word``."""
    import difflib  # the error path only: every hook parses its command line

    flag = next((e.split("=", 1)[0] for e in extras if e.startswith("-") and e != "-"), None)
    if flag is None:
        return f"unexpected argument: {' '.join(extras)}"
    close = difflib.get_close_matches(flag, flags, n=1, cutoff=0.6)
    hint = f"did you mean {close[0]}?" if close else "see --help for the flags it takes"
    return f"unknown flag {flag}; {hint}"


def commands(parser: Parser, dest: str, metavar: str) -> argparse._SubParsersAction[Parser]:
    """``parser``'s sub-commands (optional here: ``finish`` makes a missing one print help)."""
    sub = parser.add_subparsers(dest=dest, metavar=metavar)
    parser.commands = sub
    return sub


def _add_globals(parser: Parser, suppress: bool) -> None:
    """``--project``, ``--json`` and ``--format`` on ``parser`` (skipping a name it already has)."""
    taken = set(parser.flags)
    default: dict[str, Any] = {"default": argparse.SUPPRESS} if suppress else {}
    if "--project" not in taken:
        parser.add_argument(
            "--project",
            metavar="DIR",
            help="project folder (default: PROJECT_ROOT, then the current folder)",
            **({"default": None} | default),
        )
    if "--json" not in taken:
        parser.add_argument(
            "--json", action="store_true", help="print one JSON document (same as --format json)", **default
        )
    if "--format" not in taken:
        parser.add_argument(
            "--format",
            choices=FORMATS,
            help="text (for a terminal), md (Markdown: the default when the output is piped) or json",
            **({"default": None} | default),
        )


class _Version(argparse.Action):
    """``--version``; the installed version is looked up only when asked (start-up stays cheap)."""

    def __init__(self, option_strings: list[str], dest: str, help: str | None = None) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, help=help)

    def __call__(self, parser: argparse.ArgumentParser, *_args: Any, **_kwargs: Any) -> None:
        from .. import package_version

        print(f"{parser.prog} {package_version()}")
        parser.exit()


def finish(parser: Parser, top: bool = True) -> Parser:
    """Global options on every sub-command; sub-commands optional (their absence prints help);
    hidden sub-commands (``help=SUPPRESS``) kept out of the listing (argparse would print
    ``==SUPPRESS==``); each parser named as the one to match a leftover flag against (the
    innermost one given wins: a sub-command's defaults override its parent's)."""
    _add_globals(parser, suppress=not top)
    parser.set_defaults(flag_parser=parser)
    action = parser.commands
    if action is not None:
        parser.set_defaults(help_parser=parser, help_dest=action.dest)
        action._choices_actions = [c for c in action._choices_actions if c.help != argparse.SUPPRESS]
        for child in dict.fromkeys(action.choices.values()):
            finish(child, top=False)
    return parser


def _text_source(parser: Parser, what: str, example: str) -> None:
    """Where a command's text comes from: ``TEXT`` (the words as given), ``-m TEXT``, ``--file F``
    or stdin (``-``, or a pipe with none of them). One at a time: ``cli/source.py`` reads it."""
    parser.add_argument(
        "text",
        nargs="*",
        metavar="TEXT",
        help=f"{what} (e.g. {example}); '-' reads stdin, as does a pipe when no text is given",
    )
    parser.add_argument("-m", "--message", metavar="TEXT", help=f"{what}, as an option")
    parser.add_argument("--file", metavar="F", help=f"read {what} from a file")


def build_parser() -> Parser:
    parser = Parser(
        prog="infinite-context",
        description="One project brain for coding assistants: checkpoint, resume, rollback.",
    )
    parser.add_argument("--version", action=_Version, help="print the version and exit")
    sub = commands(parser, "command", "COMMAND")

    mc_ = sub.add_parser("mcp", help="run the MCP stdio server (for Claude Code and other MCP clients)")
    mc_.add_argument(
        "--budget",
        type=Flag("MemoryBudget"),
        metavar="N",
        help="working-memory token budget (default: by client)",
    )

    lsp = sub.add_parser("lsp", help="run the language server (for the VS Code extension; stdio)")
    lsp.add_argument(
        "--stdio", action="store_true", help="accepted for vscode-languageclient; stdio is the only transport"
    )

    cp = sub.add_parser("checkpoint", help="merge new context into the brain")
    _text_source(cp, "the context", "'Done: fixed the bug. Next: write the docs'")
    cp.add_argument(
        "--tokens", type=Flag("TokenCount"), metavar="N", help="tokens in the assistant's context window"
    )
    cp.add_argument(
        "--no-wait",
        action="store_true",
        help="store the offline merge now; refine with the LLM in the background",
    )

    rs = sub.add_parser("resume", help="print the brain as Markdown")
    rs.add_argument(
        "--max-tokens", type=Flag("MaxTokens"), metavar="N", help="cap the text at N tokens (default: no cap)"
    )

    sub.add_parser("status", help="version, size, merger and history of the brain")

    rb = sub.add_parser("rollback", help="restore an earlier version (as a new version)")
    # One of the two: the core refuses both at once, naming them.
    rb.add_argument("--steps", type=Flag("Steps"), metavar="N", help="go back N versions (default 1)")
    rb.add_argument("--version", type=Flag("Version"), metavar="N", help="restore exactly version N")

    hi = sub.add_parser("history", help="versions kept in history, newest first")
    hi.add_argument(
        "--limit",
        type=Flag("HistoryLimit"),
        default=HISTORY_LIMIT_DEFAULT,
        metavar="N",
        help=f"list at most N versions (default {HISTORY_LIMIT_DEFAULT})",
    )

    df = sub.add_parser("diff", help="compare two versions")
    df.add_argument("from_version", type=Flag("FromVersion"), metavar="FROM", help="the older version")
    df.add_argument("to_version", type=Flag("ToVersion"), metavar="TO", help="the newer version")

    sub.add_parser("doctor", help="check Python, the store and keys, and say what to fix")

    store = commands(sub.add_parser("store", help="manage stores"), "store_command", "ACTION")
    copy = store.add_parser("copy", help="copy every session (state + history) between stores; idempotent")
    copy.add_argument(
        "--from", dest="source", required=True, metavar="URL", help="sqlite:///... or redis://..."
    )
    copy.add_argument("--to", dest="destination", required=True, metavar="URL", help="the store to copy into")

    hook = sub.add_parser("hook", help="Claude Code hook handler (JSON on stdin; always exits 0)")
    hook.add_argument(
        "event",
        metavar="EVENT",
        help=", ".join(e.command for e in EVENTS) + " (Claude Code's names work too)",
    )

    mem = sub.add_parser("memory", help="working memory: store, query, list, compact, export, import")
    mem.add_argument(
        "--budget",
        type=Flag("MemoryBudget"),
        metavar="N",
        help="token budget (default: INFINITE_CONTEXT_BUDGET)",
    )
    mems = commands(mem, "memory_command", "ACTION")
    ms = mems.add_parser("store", help="remember a text (TEXT, -m TEXT, --file F or a pipe)")
    _text_source(ms, "the text to remember", "'Error: redis timed out'")
    ms.add_argument("--summary", help="a short summary (kept when the text is compacted away)")
    ms.add_argument(
        "--tag", action="append", dest="tags", metavar="TAG", type=Flag("Tag"), help="a tag (repeatable)"
    )
    ms.add_argument("--importance", type=Flag("Importance"), default=5, help="1-10 (default 5)")
    ms.add_argument("--pin", action="store_true", help="never evict this item")
    mq = mems.add_parser("query", help="search (BM25 + retention)")
    mq.add_argument("words", nargs="*", help="what to search for")
    mq.add_argument(
        "--tag", action="append", dest="tags", metavar="TAG", type=Flag("Tag"), help="only items with TAG"
    )
    mq.add_argument("--limit", type=Flag("SearchLimit"), default=10, help="at most N hits (default 10)")
    mq.add_argument("--archived", action="store_true", help="search the archive")
    ml = mems.add_parser("list", help="newest first")
    ml.add_argument("--offset", type=Flag("PageOffset"), default=0, help="skip the first N items")
    ml.add_argument("--limit", type=Flag("PageLimit"), default=20, help="at most N items (default 20)")
    ml.add_argument("--archived", action="store_true", help="list the archive")
    mc = mems.add_parser("compact", help="compact now")
    mc.add_argument("--target", type=Flag("CompactTarget"), help="tokens, or a share of the budget (0.5)")
    me = mems.add_parser("export", help="every item as JSON (stdout)")
    me.add_argument("--summaries-only", action="store_true", help="export summaries, not the full texts")
    mi = mems.add_parser("import", help="items from a JSON array (file or - for stdin)")
    mi.add_argument("file", metavar="FILE", help="a JSON file written by export, or - for stdin")
    mi.add_argument("--replace", action="store_true", help="replace items whose id already exists")

    ins = sub.add_parser("install", help="wire infinite-context into a client")
    ins.add_argument("client", choices=["claude-code"], help="claude-code: MCP server + hooks")
    ins.add_argument(
        "--scope",
        choices=["project", "local", "user"],
        default=None,
        help="project: .mcp.json + .claude/settings.json (shared with the team; the default); local: "
        "only you, this project (the default of --endless); user: you, every project",
    )
    ins.add_argument("--uninstall", action="store_true", help="remove what install added")
    ins.add_argument(
        "--hooks",
        choices=["auto", "mcp", "command"],
        default="auto",
        help="how PostToolUse and Stop reach infinite-context: mcp (calls to the running MCP server, "
        "no process per tool call; Claude Code 2.1.118+), command (a process each time), auto (mcp "
        "when the claude on PATH is recent enough; the default)",
    )
    ins.add_argument(
        "--endless",
        action="store_true",
        help="live endless mode: route Claude Code through the local proxy (env.ANTHROPIC_BASE_URL); "
        "with --uninstall, remove only that",
    )

    px = sub.add_parser("proxy", help="live endless mode: the local Anthropic API proxy")
    pxs = commands(px, "proxy_command", "ACTION")
    for action, text in (
        ("run", "run the proxy in the foreground (Ctrl-C stops it)"),
        ("start", "start the proxy in the background unless it runs"),
    ):
        pr = pxs.add_parser(action, help=text)
        pr.add_argument(
            "--port", type=int, metavar="N", help="port on 127.0.0.1 (default: installed, else a free one)"
        )
        pr.add_argument(
            "--upstream", metavar="URL", help="the API to forward to (default: installed, else Anthropic)"
        )
    pxs.add_parser("status", help="is it running, where it forwards, what it saved")
    pxs.add_parser("stop", help="stop the running proxy")

    tr = sub.add_parser("transcript", help="Claude Code transcripts: context meter, endless mode")
    trs = commands(tr, "transcript_command", "ACTION")
    st = trs.add_parser("stats", help="context meter and what endless mode would save")
    st.add_argument(
        "file", nargs="?", metavar="FILE", help="a .jsonl transcript (default: the project's live one)"
    )
    st.add_argument("--plot", metavar="OUT", help="also draw the context curve to OUT.png / OUT.svg")
    co = trs.add_parser("compress", help="write a copy with tool outputs replaced by observations")
    co.add_argument("file", metavar="FILE", help="the .jsonl transcript (left untouched)")
    co.add_argument("-o", "--output", required=True, metavar="OUT", help="where to write the copy")
    ex = trs.add_parser("expand", help="print the original output of one tool use")
    ex.add_argument("tool_use_id", type=Flag("ToolUseId"), metavar="TOOL_USE_ID", help="e.g. toolu_01ABC")
    ex.add_argument("--file", metavar="F", help="the transcript (default: the project's, newest first)")
    ex.add_argument(
        "--offset", type=Flag("CharOffset"), default=0, metavar="N", help="start at this character"
    )
    ex.add_argument("--all", action="store_true", help="print every page, not just the first")
    return finish(parser)
