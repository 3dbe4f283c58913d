"""The magics: each parses its arguments and makes one ProjectBrain call.

Arguments are split like a shell's (``-m "exploring data"`` stores ``exploring data``; an
unclosed quote is a usage error). Bad arguments raise IPython's ``UsageError`` naming the flag
(``argument --max-tokens: must be >= 50; pass ...``): every numeric flag follows the shared
argument rules (``core.params``, through ``core.flags.Flag``). Core errors (store down, version
not in history...) are shown as a clear message in the cell output, once, in ``_call``, and the
kernel keeps working.
"""

from __future__ import annotations

import shlex
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_cell_magic, line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments

from infinite_context_brain.core.errors import InfiniteContextError
from infinite_context_brain.core.flags import HISTORY_LIMIT_DEFAULT, Flag

from .recorder import Recorder

if TYPE_CHECKING:  # the models load with the brain, on the first magic
    from infinite_context_brain.core.models import CheckpointResult

T = TypeVar("T")


def parse_argstring(magic: Any, line: str) -> Any:
    """``line`` split like a shell's, then parsed by the magic's argparse parser (IPython's own
    ``parse_argstring`` keeps quotes: ``-m "a b"`` arrives as ``'"a'``, ``'b"'``)."""
    try:
        argv = shlex.split(line)
    except ValueError as exc:  # No closing quotation
        raise UsageError(f"{exc.args[0].lower()} in: {line}") from None
    return magic.parser.parse_args(argv)


class _Note:
    """A one-line result: Markdown in notebooks, plain text in a terminal."""

    def __init__(self, markdown: str) -> None:
        self.markdown = markdown

    def _repr_markdown_(self) -> str:
        return self.markdown

    def __repr__(self) -> str:
        return self.markdown.replace("**", "")


@magics_class
class ContextMagics(Magics):
    def __init__(self, shell: Any) -> None:
        super().__init__(shell)
        self.recorder = Recorder()
        self.auto_every: int | None = None
        self._since_auto = 0
        self._brains: dict[str, Any] = {}
        self.panel: Any = None  # the last %ctx_status panel (its widgets hold the rollback flow)
        #: terminal IPython: the %resume result not shown yet (see ``resume``)
        self._unshown: Any = None

    # ---- plumbing -------------------------------------------------------------------------
    def brain(self, project: str | None) -> Any:
        """One brain per project folder, opened on first use (default: the kernel's folder,
        which Jupyter and VS Code set to the notebook's). The folder is the explicit one in
        ``project.locate_project``'s order, so it wins over ``PROJECT_ROOT``."""
        from infinite_context_brain.core.brain import ProjectBrain
        from infinite_context_brain.core.config import load_settings

        folder = str(Path(project).expanduser().resolve()) if project else str(Path.cwd())
        if folder not in self._brains:
            self._brains[folder] = ProjectBrain.open(folder, load_settings())
        return self._brains[folder]

    def _call(self, fn: Callable[[], T]) -> T | None:
        try:
            return fn()
        except InfiniteContextError as exc:
            sys.stderr.write(f"infinite-context: {exc.message}\n" + (f"fix: {exc.fix}\n" if exc.fix else ""))
            return None

    def _line_within_limit(self, line: str) -> bool:
        """A line past the checkpoint text limit is refused before it is split like a shell's
        (which takes time growing with the square of its length: minutes for a few MB)."""
        from infinite_context_brain.core.brain import check_context_length
        from infinite_context_brain.core.config import load_settings

        def within() -> bool:
            check_context_length(line, load_settings().max_context_chars, "-m")
            return True

        return self._call(within) is True

    def _namespace(self) -> dict[str, Any]:
        return self.shell.user_ns if self.shell is not None else {}

    def close(self) -> None:
        for brain in self._brains.values():
            brain.close()
        self._brains.clear()

    # ---- checkpoint -----------------------------------------------------------------------
    @magic_arguments()
    @argument("-m", "--message", nargs="+", help="what was done / decided / is next")
    @argument("--tokens", type=Flag("TokenCount"), help="tokens in use, if known")
    @argument("--auto", metavar="N|off", help="also checkpoint every N executed cells; 'off' stops")
    @argument("--project", metavar="DIR", help="project folder (default: the notebook's)")
    @line_cell_magic
    def checkpoint(self, line: str, cell: str | None = None) -> Any:
        """Checkpoint this notebook session into the project brain.

        As a line magic: the cells run since the last checkpoint (sources, trimmed outputs,
        errors), a summary of the variables, and -m MESSAGE. As a cell magic (%%checkpoint):
        the cell body is the context.
        """
        if not self._line_within_limit(line):
            return None
        args = parse_argstring(self.checkpoint, line)
        if args.auto is not None:
            self._set_auto(args.auto)
            if cell is None and not args.message:
                return None
        message = " ".join(args.message) if args.message else None
        context: str | None = message
        if cell is not None:
            context = "\n".join(p for p in (message, cell) if p)
            if not context.strip():
                raise UsageError("%%checkpoint needs a cell body (the context)")
        return self._checkpoint(context, args.tokens, args.project, from_recorder=cell is None)

    def _checkpoint(
        self, context: str | None, tokens: int | None, project: str | None, from_recorder: bool
    ) -> Any:
        from IPython.display import display

        facts = self.recorder.facts(self._namespace(), str(Path.cwd())) if from_recorder else None
        handle = display(_Note("⏳ infinite-context: merging…"), display_id=True)

        def checkpoint() -> CheckpointResult:  # the brain opens inside the call: errors mapped
            done: CheckpointResult = self.brain(project).checkpoint(
                context, tokens, facts=facts, origin="notebook", wait=False
            )
            return done

        result = self._call(checkpoint)
        if result is None:
            if handle is not None:
                handle.update(_Note("✘ infinite-context: checkpoint not stored (see the message above)"))
            return None
        if from_recorder:
            self.recorder.reset()
        refining = f" · refining with {result.refining} in the background" if result.refining else ""
        line = (
            f"✔ checkpoint **v{result.version}** · merged by {result.merged_by} · "
            f"{result.duration_ms:.0f} ms · state {result.state_tokens:,}/{result.token_cap:,} tokens"
            f"{refining}"
            if result.changed
            else f"– not saved: {'; '.join(result.warnings)}"
        )
        if result.changed and result.warnings:
            line += "  \n" + "  \n".join(f"⚠ {w}" for w in result.warnings)

        if handle is not None:
            handle.update(_Note(line))
        return None

    def _set_auto(self, value: str) -> None:
        if value == "off":
            self.auto_every = None
            print("infinite-context: automatic checkpoints off")
            return
        from argparse import ArgumentTypeError

        try:
            every = Flag("AutoEvery")(value)
        except ArgumentTypeError as exc:
            raise UsageError(f"argument --auto: {exc} (or 'off')") from None
        self.auto_every, self._since_auto = every, 0
        print(f"infinite-context: checkpoint every {every} executed cells")

    def post_run_cell(self, result: Any) -> None:
        unshown, self._unshown = self._unshown, None
        if unshown is not None and not unshown.was_shown:  # terminal: `x = %resume`
            unshown.show()
        before = self.recorder.executed
        self.recorder.post_run_cell(result)
        if self.auto_every is None or self.recorder.executed == before:
            return
        self._since_auto += 1
        if self._since_auto >= self.auto_every:
            self._since_auto = 0
            self._checkpoint(None, None, None, from_recorder=True)

    # ---- resume / status / history / rollback ---------------------------------------------
    @magic_arguments()
    @argument("--max-tokens", type=Flag("MaxTokens"), help="cap the text at this many tokens")
    @argument("--project", metavar="DIR", help="project folder (default: the notebook's)")
    @line_magic
    def resume(self, line: str) -> Any:
        """Show the project brain as Markdown; returns the ProjectState (None before the first):
        ``state = %resume``. The Markdown shows once, never followed by the object's repr: in a
        kernel where the magic runs; in terminal IPython as the cell's ``Out[n]``, or after the
        cell when the result was assigned (an ``Out[n]:`` with nothing after it otherwise)."""
        from .views import LocalPaths, ResumedState, display_bundle, in_kernel, markdown_bundle

        args = parse_argstring(self.resume, line)
        brain = self._call(lambda: self.brain(args.project))
        if brain is None:
            return None
        result = self._call(lambda: brain.resume(args.max_tokens))
        if result is None:
            return None
        paths = LocalPaths.of(brain)
        for warning in result.warnings:
            print(f"warning: {paths.hide(warning)}", file=sys.stderr)
        markdown = paths.hide(result.markdown)
        if result.state is None:
            display_bundle(markdown_bundle(markdown))
            return None
        resumed = ResumedState.of(result.state, markdown)
        if in_kernel():
            resumed.show()
        else:
            self._unshown = resumed
        return resumed

    @magic_arguments()
    @argument("--project", metavar="DIR", help="project folder (default: the notebook's)")
    @line_magic
    def ctx_status(self, line: str) -> None:
        """A panel: state size, version, last checkpoint, merger, history with rollback (asks
        first; refreshes after)."""
        from .panel import show_status

        args = parse_argstring(self.ctx_status, line)
        brain = self._call(lambda: self.brain(args.project))
        if brain is not None:
            self.panel = self._call(lambda: show_status(brain))

    @magic_arguments()
    @argument(
        "--limit",
        type=Flag("HistoryLimit"),
        default=HISTORY_LIMIT_DEFAULT,
        help=f"list at most N versions (default {HISTORY_LIMIT_DEFAULT})",
    )
    @argument("--project", metavar="DIR", help="project folder (default: the notebook's)")
    @line_magic
    def ctx_history(self, line: str) -> None:
        """The versions kept in history, newest first."""
        from .views import display_bundle, history_bundle

        args = parse_argstring(self.ctx_history, line)
        items = self._call(lambda: self.brain(args.project).history(args.limit))
        if items is None:
            return
        if not items:
            print("No history yet: run %checkpoint first.")
            return
        display_bundle(history_bundle(items))

    @magic_arguments()
    @argument("--steps", type=Flag("Steps"), help="go back this many versions (default 1)")
    @argument("--version", type=Flag("Version"), help="restore exactly this version")
    @argument("--project", metavar="DIR", help="project folder (default: the notebook's)")
    @line_magic
    def rollback(self, line: str) -> None:
        """Restore an earlier version (written as a new version)."""
        args = parse_argstring(self.rollback, line)
        if args.steps is not None and args.version is not None:
            raise UsageError("give --steps or --version, not both")
        result = self._call(lambda: self.brain(args.project).rollback(steps=args.steps, version=args.version))
        if result is not None:
            print(f"✔ restored v{result.restored_from} as v{result.version}")
