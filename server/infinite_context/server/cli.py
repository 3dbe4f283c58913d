"""The ``infinite-context`` command.

Each sub-command parses its flags, makes one ProjectBrain call and prints the result: with rich
for people, or one JSON document with ``--json``. Core errors are turned into a message and an
exit status in ``main`` only. Heavy modules (rich, mcp) are imported inside the commands that
use them, so ``infinite-context mcp`` and the hooks start fast.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from infinite_context.core.errors import InfiniteContextError, InvalidInput

if TYPE_CHECKING:
    from infinite_context.core.config import Settings


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="infinite-context",
        description="One project brain for coding assistants: checkpoint, resume, rollback.",
    )
    parser.add_argument("--project", metavar="DIR", help="project folder (default: PROJECT_ROOT, then cwd)")
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    mc_ = sub.add_parser("mcp", help="run the MCP stdio server (for Claude Code and other MCP clients)")
    mc_.add_argument(
        "--budget", type=int, metavar="N", help="working-memory token budget (default: by client)"
    )

    lsp = sub.add_parser("lsp", help="run the language server (for the VS Code extension; stdio)")
    lsp.add_argument(
        "--stdio", action="store_true", help="accepted for vscode-languageclient; stdio is the only transport"
    )

    cp = sub.add_parser("checkpoint", help="merge new context into the brain")
    source = cp.add_mutually_exclusive_group(required=True)
    source.add_argument("-m", "--message", metavar="TEXT", help="the context text")
    source.add_argument("--file", metavar="F", help="read the context from a file")
    source.add_argument("stdin", nargs="?", choices=["-"], help="'-' reads the context from stdin")
    cp.add_argument("--tokens", type=int, metavar="N", help="tokens in the assistant's context window")
    cp.add_argument(
        "--no-wait",
        action="store_true",
        help="store the offline merge now; refine with the LLM in the background",
    )

    rf = sub.add_parser("refine", help=argparse.SUPPRESS)  # started by `checkpoint --no-wait`
    rf.add_argument("--version", type=int, required=True)
    rf.add_argument("--context-file", required=True)
    rf.add_argument("--tokens", type=int)

    rs = sub.add_parser("resume", help="print the brain as Markdown")
    rs.add_argument("--max-tokens", type=int, metavar="N")

    sub.add_parser("status", help="version, size, merger and history of the brain")

    rb = sub.add_parser("rollback", help="restore an earlier version (as a new version)")
    which = rb.add_mutually_exclusive_group()
    which.add_argument("--steps", type=int, metavar="N")
    which.add_argument("--version", type=int, metavar="N")

    hi = sub.add_parser("history", help="versions kept in history, newest first")
    hi.add_argument("--limit", type=int, default=10, metavar="N")

    df = sub.add_parser("diff", help="compare two versions")
    df.add_argument("from_version", type=int, metavar="A")
    df.add_argument("to_version", type=int, metavar="B")

    sub.add_parser("doctor", help="check Python, the store and keys, and say what to fix")

    store = sub.add_parser("store", help="manage stores").add_subparsers(dest="store_command", required=True)
    copy = store.add_parser("copy", help="copy every session (state + history) between stores; idempotent")
    copy.add_argument(
        "--from", dest="source", required=True, metavar="URL", help="sqlite:///... or redis://..."
    )
    copy.add_argument("--to", dest="destination", required=True, metavar="URL")

    hook = sub.add_parser("hook", help="Claude Code hook handler (JSON on stdin; always exits 0)")
    hook.add_argument(
        "event",
        metavar="EVENT",
        help="session-start, session-end, pre-compact or post-tool-use (Claude Code's names work too)",
    )

    mem = sub.add_parser("memory", help="working memory: store, query, list, compact, export, import")
    mem.add_argument(
        "--budget", type=int, metavar="N", help="token budget (default: INFINITE_CONTEXT_BUDGET)"
    )
    mems = mem.add_subparsers(dest="memory_command", required=True, metavar="ACTION")
    ms = mems.add_parser("store", help="remember a text (from -m, or stdin with -)")
    ms.add_argument("-m", "--message", metavar="TEXT")
    ms.add_argument("stdin", nargs="?", choices=["-"])
    ms.add_argument("--summary")
    ms.add_argument("--tag", action="append", dest="tags", metavar="TAG")
    ms.add_argument("--importance", type=int, default=5)
    ms.add_argument("--pin", action="store_true")
    mq = mems.add_parser("query", help="search (BM25 + retention)")
    mq.add_argument("words", nargs="*")
    mq.add_argument("--tag", action="append", dest="tags", metavar="TAG")
    mq.add_argument("--limit", type=int, default=10)
    mq.add_argument("--archived", action="store_true", help="search the archive")
    ml = mems.add_parser("list", help="newest first")
    ml.add_argument("--offset", type=int, default=0)
    ml.add_argument("--limit", type=int, default=20)
    ml.add_argument("--archived", action="store_true")
    mc = mems.add_parser("compact", help="compact now")
    mc.add_argument("--target", type=float, help="tokens, or a share of the budget (0.5)")
    me = mems.add_parser("export", help="every item as JSON (stdout)")
    me.add_argument("--summaries-only", action="store_true")
    mi = mems.add_parser("import", help="items from a JSON array (file or - for stdin)")
    mi.add_argument("file", metavar="FILE")

    ins = sub.add_parser("install", help="wire infinite-context into a client")
    ins.add_argument("client", choices=["claude-code"], help="claude-code: MCP server + hooks")
    ins.add_argument(
        "--scope",
        choices=["project", "local", "user"],
        default="project",
        help="project: .mcp.json + .claude/settings.json (shared with the team); local: only you, "
        "this project; user: you, every project",
    )
    ins.add_argument("--uninstall", action="store_true", help="remove what install added")

    tr = sub.add_parser("transcript", help="Claude Code transcripts: context meter, endless mode")
    trs = tr.add_subparsers(dest="transcript_command", required=True, metavar="ACTION")
    st = trs.add_parser("stats", help="context meter and what endless mode would save")
    st.add_argument(
        "file", nargs="?", metavar="FILE", help="a .jsonl transcript (default: the project's live one)"
    )
    st.add_argument("--plot", metavar="OUT", help="also draw the context curve to OUT.png / OUT.svg")
    co = trs.add_parser("compress", help="write a copy with tool outputs replaced by observations")
    co.add_argument("file", metavar="FILE")
    co.add_argument("-o", "--output", required=True, metavar="OUT")
    ex = trs.add_parser("expand", help="print the original output of one tool use")
    ex.add_argument("tool_use_id", metavar="TOOL_USE_ID")
    ex.add_argument("--file", metavar="F", help="the transcript (default: the project's, newest first)")
    ex.add_argument("--offset", type=int, default=0, metavar="N", help="start at this character")
    ex.add_argument("--all", action="store_true", help="print every page, not just the first")
    return parser


def _settings(args: argparse.Namespace) -> Settings:
    from infinite_context.core.config import load_settings

    return load_settings(project_root=Path(args.project) if args.project else None)


def _open_brain(args: argparse.Namespace) -> Any:
    from infinite_context.core.brain import ProjectBrain

    return ProjectBrain.open(settings=_settings(args))


def _read_context(args: argparse.Namespace) -> str:
    if args.message is not None:
        return str(args.message)
    if args.file is not None:
        try:
            return Path(args.file).read_text(encoding="utf-8")
        except OSError as exc:
            raise InvalidInput(
                "--file", f"cannot read {args.file}: {exc.strerror}", fix="pass a readable file"
            ) from None
        except UnicodeDecodeError:
            raise InvalidInput("--file", f"{args.file} is not UTF-8 text", fix="pass a text file") from None
    return sys.stdin.read()


def _emit(args: argparse.Namespace, data: Any, human: Callable[[], None]) -> None:
    if args.json:
        import orjson
        from pydantic import BaseModel

        def encode(value: Any) -> Any:
            if isinstance(value, BaseModel):
                return value.model_dump(mode="json")
            raise TypeError

        sys.stdout.write(orjson.dumps(data, default=encode, option=orjson.OPT_INDENT_2).decode() + "\n")
    else:
        human()


def _console() -> Any:
    from rich.console import Console

    return Console(highlight=False)


def cmd_mcp(args: argparse.Namespace) -> int:
    from infinite_context.core.config import load_settings

    settings = load_settings(project_root=Path(args.project) if args.project else None, budget=args.budget)
    from infinite_context.core.brain import ProjectBrain

    from .mcp.app import serve

    serve(lambda: ProjectBrain.open(settings=settings))
    return 0


def cmd_lsp(args: argparse.Namespace) -> int:
    from .lsp.app import serve

    serve()
    return 0


def cmd_checkpoint(args: argparse.Namespace) -> int:
    context = _read_context(args)
    with _open_brain(args) as brain:
        wait = not args.no_wait
        if args.json:
            result = brain.checkpoint(context, args.tokens, wait=wait)
        else:
            merger = getattr(brain.merger, "first_label", "offline")
            with _console().status(f"Merging with {merger}…" if wait else "Merging…"):
                result = brain.checkpoint(context, args.tokens, wait=wait)
    from .text import checkpoint_text

    _emit(args, result, lambda: _console().print(checkpoint_text(result)))
    return 0


def cmd_refine(args: argparse.Namespace) -> int:
    from infinite_context.core.refine import read_context_file

    context = read_context_file(Path(args.context_file))
    with _open_brain(args) as brain:
        result = brain.refine(context, args.version, args.tokens)
    _emit(args, result, lambda: None)
    return 0


def cmd_resume(args: argparse.Namespace) -> int:
    with _open_brain(args) as brain:
        result = brain.resume(args.max_tokens)

    def human() -> None:
        from rich.markdown import Markdown

        console = _console()
        console.print(Markdown(result.markdown))
        for warning in result.warnings:
            console.print(f"[yellow]Warning:[/] {warning}")

    _emit(args, result, human)
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    with _open_brain(args) as brain:
        result = brain.status()
    from .text import status_text

    _emit(args, result, lambda: _console().print(status_text(result)))
    return 0


def cmd_rollback(args: argparse.Namespace) -> int:
    with _open_brain(args) as brain:
        result = brain.rollback(steps=args.steps, version=args.version)
    from .text import rollback_text

    _emit(args, result, lambda: _console().print(rollback_text(result)))
    return 0


def cmd_history(args: argparse.Namespace) -> int:
    with _open_brain(args) as brain:
        items = brain.history(args.limit)

    def human() -> None:
        from rich.table import Table

        table = Table("version", "time (UTC)", "merged by", "merge ms", "current task / change")
        for h in items:
            table.add_row(
                str(h.version),
                f"{h.timestamp:%Y-%m-%d %H:%M:%S}",
                h.merged_by,
                f"{h.merge_duration_ms:.1f}",
                h.first_line,
            )
        _console().print(table if items else "No history yet.")

    _emit(args, {"items": items}, human)
    return 0


def cmd_diff(args: argparse.Namespace) -> int:
    with _open_brain(args) as brain:
        result = brain.diff(args.from_version, args.to_version)

    def human() -> None:
        from rich.syntax import Syntax

        from .text import diff_text

        body = diff_text(result)
        _console().print(Syntax(body, "diff") if result.changes else body)

    _emit(args, result, human)
    return 0


def cmd_doctor(args: argparse.Namespace) -> int:
    from infinite_context.core.diagnostics import run_checks

    checks = run_checks(args.project)

    def human() -> None:
        console = _console()
        marks = {"ok": "[green]✔[/]", "warn": "[yellow]![/]", "fail": "[red]✘[/]"}
        for check in checks:
            console.print(f"{marks[check.status]} {check.name}: {check.detail}")
            if check.fix:
                console.print(f"    fix: {check.fix}")

    _emit(args, {"checks": checks}, human)
    return 1 if any(c.status == "fail" for c in checks) else 0


def cmd_store(args: argparse.Namespace) -> int:
    from infinite_context.core.config import load_settings
    from infinite_context.core.storage import open_store
    from infinite_context.core.storage.copy import copy_all

    with (
        open_store(load_settings(store_url=args.source)) as source,
        open_store(load_settings(store_url=args.destination)) as destination,
    ):
        report = copy_all(source, destination)

    def human() -> None:
        console = _console()
        console.print(
            f"{report.source} -> {report.destination}: {report.sessions_seen} sessions, "
            f"{report.sessions_copied} copied ({report.history_entries_copied} history entries), "
            f"{report.sessions_unchanged} already up to date, {len(report.skipped)} skipped."
        )
        for line in report.skipped:
            console.print(f"[yellow]skipped[/] {line}")

    _emit(args, report, human)
    return 0


def _project_root(args: argparse.Namespace, settings: Settings) -> Path:
    return settings.project_root or Path.cwd()


def _store_lookup(args: argparse.Namespace, settings: Settings) -> Any:
    """Stored observations are per project: used when the transcript is the project's own."""
    if args.file is not None and args.project is None:
        return None, None
    from infinite_context.core.brain import ProjectBrain
    from infinite_context.core.transcript.service import store_lookup

    brain = ProjectBrain.open(settings=settings)
    return brain, store_lookup(brain)


def cmd_transcript(args: argparse.Namespace) -> int:
    from infinite_context.core.transcript import service

    settings = _settings(args)
    action = args.transcript_command
    if action == "expand":
        root = None if args.file else _project_root(args, settings)
        first = service.expand(args.tool_use_id, args.file, root, args.offset)
        pages = [first]
        while args.all and pages[-1].next_offset is not None:
            pages.append(service.expand(args.tool_use_id, args.file, root, pages[-1].next_offset))

        def show_expand() -> None:
            for page in pages:
                sys.stdout.write(page.text)
            sys.stdout.write("\n")
            last = pages[-1]
            if last.next_offset is not None:
                sys.stderr.write(
                    f"(showing up to character {last.next_offset:,} of {last.total_chars:,}; "
                    f"--offset {last.next_offset} for more, or --all)\n"
                )

        _emit(args, pages[0] if len(pages) == 1 else {"pages": pages}, show_expand)
        return 0
    brain, lookup = _store_lookup(args, settings)
    try:
        if action == "compress":
            report = service.compress(args.file, args.output, settings, lookup)
            from .text import compress_text

            _emit(args, report, lambda: _console().print(compress_text(report)))
            return 0
        root = None if args.file else _project_root(args, settings)
        stats = service.transcript_stats(args.file, root, settings, lookup)
    finally:
        if brain is not None:
            brain.close()
    chart = None
    if args.plot:
        from infinite_context.core.transcript.plot import plot_context

        chart = plot_context(stats, args.plot)

    def show_stats() -> None:
        from .text import stats_tables

        console = _console()
        for renderable in stats_tables(stats):
            console.print(renderable)
        if chart is not None:
            console.print(f"Chart written to {chart}")

    _emit(args, stats, show_stats)
    return 0


def cmd_memory(args: argparse.Namespace) -> int:
    from .cli_memory import run_memory

    return run_memory(args, _emit, _console)


def cmd_install(args: argparse.Namespace) -> int:
    from infinite_context.core.claude_code import install

    # The folder Claude Code is started in (it keys project and local settings on it).
    project = _settings(args).project_root or Path.cwd()
    report = install(project, args.scope, uninstall=args.uninstall)

    def human() -> None:
        console = _console()
        for change in report.changes:
            console.print(f"[green]✔[/] {change}", markup=True)
        for backup in report.backups:
            console.print(f"  backup: {backup}", markup=False)
        if not report.changes:
            console.print("Nothing to change: already " + ("removed." if args.uninstall else "installed."))
        elif not args.uninstall:
            console.print(
                "Restart Claude Code (or run /mcp) to pick it up; `infinite-context doctor` checks it."
            )

    _emit(args, report.__dict__, human)
    return 0


def cmd_hook(args: argparse.Namespace) -> int:
    from .hooks import run_hook

    return run_hook(args.event, sys.stdin.buffer.read(), Path(args.project) if args.project else None)


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "mcp": cmd_mcp,
    "lsp": cmd_lsp,
    "checkpoint": cmd_checkpoint,
    "refine": cmd_refine,
    "resume": cmd_resume,
    "status": cmd_status,
    "rollback": cmd_rollback,
    "history": cmd_history,
    "diff": cmd_diff,
    "doctor": cmd_doctor,
    "store": cmd_store,
    "transcript": cmd_transcript,
    "hook": cmd_hook,
    "install": cmd_install,
    "memory": cmd_memory,
}


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    from infinite_context.core.logs import setup_logging

    if args.command in ("hook", "lsp"):
        # A hook must not fail on our settings; the language server reads its settings from the
        # editor after `initialize` (and answers it without loading pydantic-settings first).
        import os

        setup_logging(os.environ.get("INFINITE_CONTEXT_LOG_LEVEL") or os.environ.get("LOG_LEVEL") or "INFO")
        return cmd_hook(args) if args.command == "hook" else cmd_lsp(args)
    try:
        setup_logging(_settings(args).log_level)
        return COMMANDS[args.command](args)
    except InfiniteContextError as exc:
        if args.json:
            import orjson

            sys.stdout.write(orjson.dumps(exc.to_dict(), option=orjson.OPT_INDENT_2).decode() + "\n")
        else:
            sys.stderr.write(f"error: {exc.message}\n" + (f"fix: {exc.fix}\n" if exc.fix else ""))
        return exc.exit_code
    except KeyboardInterrupt:
        return 130
