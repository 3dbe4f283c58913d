"""The ``infinite-context`` command.

Each sub-command parses its flags, makes one ProjectBrain call and prints the result: with rich
for people, or one JSON document with ``--json``. Core errors are turned into a message and an
exit status in ``main`` only. Heavy modules (rich, mcp) are imported inside the commands that
use them, so ``infinite-context mcp`` and the hooks start fast.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from infinite_context_brain.core.errors import InfiniteContextError

from .parser import build_parser

if TYPE_CHECKING:
    from rich.console import Console

    from infinite_context_brain.core.brain import ProjectBrain
    from infinite_context_brain.core.config import Settings
    from infinite_context_brain.core.transcript.transform import Lookup


def _settings(args: argparse.Namespace, **overrides: Any) -> Settings:
    """The one place the CLI loads Settings (``--project`` plus any overrides); a log level set
    only in ``.env`` takes effect from here on. ``--project`` enters as an explicit value, so
    every consumer of these settings sees it; the folder itself is always chosen by
    ``locate_project`` (explicit > PROJECT_ROOT > CLAUDE_PROJECT_DIR > cwd)."""
    from infinite_context_brain.core.config import load_settings
    from infinite_context_brain.core.logs import setup_logging

    settings = load_settings(project_root=Path(args.project) if args.project else None, **overrides)
    setup_logging(settings.log_level)
    return settings


def _open_brain(args: argparse.Namespace) -> ProjectBrain:
    from infinite_context_brain.core.brain import ProjectBrain

    return ProjectBrain.open(args.project, _settings(args))


def _markdown(args: argparse.Namespace) -> bool:
    """Plain Markdown out (``--format md``, or stdout is a pipe / file) instead of rich text."""
    return bool(args.format == "md")


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


def _console() -> Console:
    from rich.console import Console

    # Piped or --format md: no padding, no wrapping, no cropping (each line as long as it is).
    return Console(highlight=False, soft_wrap=not sys.stdout.isatty())


def cmd_mcp(args: argparse.Namespace) -> int:
    import anyio

    from ..mcp.app import build_server
    from ..mcp.holder import BrainHolder
    from ..mcp.serve import serve_stdio
    from ..stopping import stop_on_signals

    def open_brain() -> ProjectBrain:
        # In the warm-up thread (or the first tool call), never on the way to `initialize`: a
        # bad setting or an unusable store becomes a clear tool error, not a failed start.
        from infinite_context_brain.core.brain import ProjectBrain

        return ProjectBrain.open(settings=_settings(args, budget=args.budget))

    holder = BrainHolder(open_brain)
    app = build_server(holder)
    # SIGINT / SIGTERM (Claude Code's way to stop it): release the session lock and leave.
    with stop_on_signals(holder.close, "mcp server"):
        try:
            anyio.run(serve_stdio, app)
        finally:
            holder.close()
    return 0


def cmd_lsp(args: argparse.Namespace) -> int:
    from ..lsp.app import build_server
    from ..stopping import stop_on_signals

    server = build_server()
    with stop_on_signals(server.sessions.close_all, "language server"):
        server.start_io()
    return 0


def cmd_checkpoint(args: argparse.Namespace) -> int:
    from .source import read_text

    context = read_text(args, "the context", 'infinite-context checkpoint "Done: fixed the bug"')
    with _open_brain(args) as brain:
        wait = not args.no_wait
        if args.json:
            result = brain.checkpoint(context, args.tokens, origin="cli", wait=wait)
        else:
            merger = brain.merger.label
            with _console().status(f"Merging with {merger}…" if wait else "Merging…"):
                result = brain.checkpoint(context, args.tokens, origin="cli", wait=wait)

    from ..text import checkpoint_text

    _emit(args, result, lambda: _console().print(checkpoint_text(result)))
    return 0


def cmd_resume(args: argparse.Namespace) -> int:
    with _open_brain(args) as brain:
        result = brain.resume(args.max_tokens)

    def human() -> None:
        if _markdown(args):
            sys.stdout.write(result.markdown.rstrip("\n") + "\n")
            for warning in result.warnings:
                sys.stderr.write(f"Warning: {warning}\n")
            return
        from rich.markdown import Markdown

        console = _console()
        console.print(Markdown(result.markdown))
        for warning in result.warnings:
            console.print(f"[yellow]Warning:[/] {warning}", markup=True)

    _emit(args, result, human)
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    with _open_brain(args) as brain:
        result = brain.status()
    from ..text import status_text

    def human() -> None:
        if _markdown(args):
            from .output import status_md

            sys.stdout.write(status_md(result))
        else:
            _console().print(status_text(result), markup=False)

    _emit(args, result, human)
    return 0


def cmd_rollback(args: argparse.Namespace) -> int:
    with _open_brain(args) as brain:
        result = brain.rollback(steps=args.steps, version=args.version)
    from ..text import rollback_text

    _emit(args, result, lambda: _console().print(rollback_text(result)))
    return 0


def cmd_history(args: argparse.Namespace) -> int:
    with _open_brain(args) as brain:
        items = brain.history(args.limit)

    def human() -> None:
        if _markdown(args):
            from .output import history_md

            sys.stdout.write(history_md(items))
            return
        from ..text import history_text

        _console().print(history_text(items), markup=False)

    _emit(args, {"items": items}, human)
    return 0


def cmd_diff(args: argparse.Namespace) -> int:
    with _open_brain(args) as brain:
        result = brain.diff(args.from_version, args.to_version)

    def human() -> None:
        if _markdown(args):
            from .output import diff_md

            sys.stdout.write(diff_md(result))
            return
        from ..text import diff_text

        _console().print(diff_text(result), markup=False)

    _emit(args, result, human)
    return 0


def cmd_doctor(args: argparse.Namespace) -> int:
    from ..claude_code.doctor import run_checks

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
    from infinite_context_brain.core.config import load_settings
    from infinite_context_brain.core.storage import open_store
    from infinite_context_brain.core.storage.copy import copy_all

    with (
        open_store(load_settings(store_url=args.source)) as source,
        open_store(load_settings(store_url=args.destination)) as destination,
    ):
        report = copy_all(source, destination)

    def human() -> None:
        console = _console()
        console.print(report.summary(), markup=False)
        for line in report.skipped:
            console.print(f"[yellow]skipped[/] {line}")

    _emit(args, report, human)
    return 0


def _project_root(args: argparse.Namespace, settings: Settings) -> Path:
    from infinite_context_brain.core.project import locate_project

    return locate_project(args.project, settings)


def _store_lookup(args: argparse.Namespace, settings: Settings) -> tuple[ProjectBrain | None, Lookup | None]:
    """Stored observations are per project: used when the transcript is the project's own."""
    if args.file is not None and args.project is None:
        return None, None
    from infinite_context_brain.core.brain import ProjectBrain
    from infinite_context_brain.core.transcript.service import store_lookup

    brain = ProjectBrain.open(settings=settings)
    return brain, store_lookup(brain)


def cmd_transcript(args: argparse.Namespace) -> int:
    from infinite_context_brain.core.transcript import service

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
            from ..text import compress_text

            _emit(args, report, lambda: _console().print(compress_text(report)))
            return 0
        root = None if args.file else _project_root(args, settings)
        stats = service.transcript_stats(args.file, root, settings, lookup)
    finally:
        if brain is not None:
            brain.close()
    chart = None
    if args.plot:
        from infinite_context_brain.core.transcript.plot import plot_context

        chart = plot_context(stats, args.plot)

    def show_stats() -> None:
        from ..text import stats_tables

        console = _console()
        for renderable in stats_tables(stats):
            console.print(renderable)
        if chart is not None:
            console.print(f"Chart written to {chart}")

    _emit(args, stats, show_stats)
    return 0


def cmd_memory(args: argparse.Namespace) -> int:
    from .memory import run_memory

    return run_memory(args, _settings, _emit, _console)


def cmd_install(args: argparse.Namespace) -> int:
    from ..claude_code.install import InstallReport, Scope, endless_warning, install_for_claude_code

    # The folder Claude Code is started in (it keys project and local settings on it).
    settings = _settings(args)
    scope: Scope = args.scope or "project"
    only_endless = args.endless and args.uninstall  # `--uninstall --endless` keeps MCP and hooks
    report = (
        InstallReport(scope=scope)
        if only_endless
        else install_for_claude_code(
            _project_root(args, settings),
            scope,
            uninstall=args.uninstall,
            claude_config_dir=settings.claude_config_dir,
            hooks=args.hooks,
        )
    )
    if args.endless or args.uninstall:  # live endless mode: env.ANTHROPIC_BASE_URL + the proxy
        from ..proxy.wiring import install_endless

        # A proxy on this machine is the user's own: the local scope unless another is asked for.
        endless_scope: Scope = args.scope or "local"
        changed = len(report.changes)
        install_endless(
            _project_root(args, settings),
            endless_scope,
            settings.resolved_data_dir(),
            report,
            uninstall=args.uninstall,
            claude_config_dir=settings.claude_config_dir,
            environ_base_url=os.environ.get("ANTHROPIC_BASE_URL"),
        )
        if not args.uninstall and len(report.changes) > changed:
            warning = endless_warning(endless_scope, _endless_url(settings))
            if warning:
                report.problems.append(warning)
            report.restart = report.restart or "Restart Claude Code to route it through the proxy."

    def human() -> None:
        console = _console()
        for change in report.changes:
            console.print(f"[green]✔[/] {change}", markup=True)
        for backup in report.backups:
            console.print(f"  backup: {backup}", markup=False)
        if report.hooks and report.changes:
            console.print(f"  hooks: {report.hooks}", markup=False)
        if not report.changes:
            console.print("Nothing to change: already " + ("removed." if args.uninstall else "installed."))
        for problem in report.problems:
            console.print(f"[yellow]![/] {problem}", markup=True, highlight=False)
        marks = {"ok": "[green]✔[/]", "warn": "[yellow]![/]", "fail": "[red]✘[/]"}
        if report.checks:
            console.print("Checks (as `infinite-context doctor` makes them):")
        for check in report.checks:
            console.print(f"  {marks[check['status']]} {check['name']}: {check['detail']}", markup=True)
        if report.files:
            console.print("Files changed:")
            for path in report.files:
                console.print(f"  {path}", markup=False)
        if report.restart:
            console.print(report.restart, markup=False)

    _emit(args, report.__dict__, human)
    return 0


def _endless_url(settings: Settings) -> str | None:
    from ..proxy.config import read_config

    config = read_config(settings.resolved_data_dir())
    return config.url if config is not None else None


def cmd_proxy(args: argparse.Namespace) -> int:
    from ..proxy.cli import run_proxy

    return run_proxy(args, _settings(args), _emit)


def cmd_hook(args: argparse.Namespace) -> int:
    from ..claude_code.command import run

    return run(args.event, sys.stdin.buffer.read(), args.project)


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "mcp": cmd_mcp,
    "lsp": cmd_lsp,
    "checkpoint": cmd_checkpoint,
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
    "proxy": cmd_proxy,
    "memory": cmd_memory,
}


def main(argv: Sequence[str] | None = None) -> int:
    from .output import flag_message, output_format

    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse(argv)
    if getattr(args, str(args.help_dest), None) is None:  # `infinite-context`, `... memory`: help
        args.help_parser.print_help()
        return 0
    args.format = output_format(args)
    args.json = args.format == "json"
    from infinite_context_brain.core.logs import level_from_env, setup_logging

    # Settings load inside each command (once); hooks and the language server read theirs from
    # Claude Code's payload / the editor, and must start without pydantic-settings.
    setup_logging(level_from_env())
    try:
        return COMMANDS[args.command](args)
    except InfiniteContextError as exc:
        if args.json:
            import orjson

            sys.stdout.write(orjson.dumps(exc.to_dict(), option=orjson.OPT_INDENT_2).decode() + "\n")
        else:
            message = flag_message(exc, argv, getattr(args, "text_source", None))
            sys.stderr.write(f"error: {message}\n" + (f"fix: {exc.fix}\n" if exc.fix else ""))
        return exc.exit_code
    except KeyboardInterrupt:
        return 130
