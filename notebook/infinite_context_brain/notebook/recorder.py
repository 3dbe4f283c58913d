"""What happened in this kernel since the last checkpoint, as context facts.

Executed cells become runs (the first source line, ok or the exception line), a cell that raised
stays a failure until a later run of the same cell passes, the user namespace becomes a variable
summary (names, types, shapes or lengths; never values). Outputs are trimmed (printed text, the
result's repr; images and widgets named, never embedded) and only the last cell's reach the
facts. Registered on IPython's ``pre_run_cell`` / ``post_run_cell`` events; printed output is
captured by a pass-through tee on ``sys.stdout`` while a cell runs, so the user sees everything
as before.
"""

from __future__ import annotations

import re
import sys
import types
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TextIO, cast

from infinite_context_brain.core.redact import redact

if TYPE_CHECKING:
    from IPython.core.interactiveshell import ExecutionInfo, ExecutionResult

    from infinite_context_brain.core.facts import ContextFacts

SOURCE_CHARS = 600
OUTPUT_CHARS = 400
#: printed output kept while a cell runs, before it is redacted and clipped to OUTPUT_CHARS
PRINTED_CHARS = 4 * OUTPUT_CHARS
MAX_CELLS = 40  # older cells beyond this are summarised by count
NAMESPACE_ITEMS = 30
_IPYTHON_NAMES = {"In", "Out", "exit", "quit", "get_ipython", "open"}


@dataclass
class CellRecord:
    number: int | None
    source: str
    output: str = ""
    error: str | None = None


class _Tee:
    """Writes through to the real stream and keeps the first ``limit`` characters."""

    def __init__(self, inner: TextIO, limit: int) -> None:
        self._inner = inner
        self._limit = limit
        self.kept: list[str] = []
        self._size = 0
        self.cut = False  # more was written than kept

    def write(self, text: str) -> int:
        room = self._limit - self._size
        self.cut |= len(text) > room
        if room > 0:
            piece = text[:room]
            self.kept.append(piece)
            self._size += len(piece)
        return self._inner.write(text)

    def text(self) -> str:
        """What was kept, without a last word the limit cut (part of a key no longer matches
        its pattern)."""
        kept = "".join(self.kept)
        return _CUT_WORD.sub("", kept) if self.cut else kept

    def __getattr__(self, name: str) -> Any:  # flush, fileno, encoding, isatty...
        return getattr(self._inner, name)


_CUT_WORD = re.compile(r"\S+\Z")


def _clip(text: str, limit: int) -> str:
    """Redacted, then cut to ``limit`` characters: a key cut first would no longer match its
    pattern, and its first part would be kept."""
    text = redact(text).strip()
    return text if len(text) <= limit else text[: limit - 1] + "…"


def describe_value(value: Any) -> str:
    """A short description of a value: its kind and size, never its content."""
    kind = type(value).__name__
    if hasattr(value, "_repr_png_") or kind in {"Figure", "Axes", "AxesSubplot"}:
        return f"[image: {kind}]"
    if type(value).__module__.startswith("ipywidgets"):
        return f"[widget: {kind}]"
    shape = getattr(value, "shape", None)
    if isinstance(shape, tuple):
        return f"{kind} shape {shape}"
    if isinstance(value, (str, bytes, list, tuple, dict, set, frozenset)):
        return f"{kind} len {len(value)}"
    return kind


def _result_text(value: Any) -> str:
    if value is None:
        return ""
    described = describe_value(value)
    if described.startswith("["):
        return described
    try:
        return _clip(repr(value), OUTPUT_CHARS)
    except Exception:  # a broken __repr__ must not break the recorder
        return described


@dataclass
class Recorder:
    cells: list[CellRecord] = field(default_factory=list)
    dropped: int = 0
    executed: int = 0  # cells run since the recorder started (for --auto)
    _tee: _Tee | None = None

    def pre_run_cell(self, info: ExecutionInfo) -> None:
        if self._tee is None:
            self._tee = _Tee(sys.stdout, PRINTED_CHARS)
            sys.stdout = cast(TextIO, self._tee)  # duck-typed: write + everything else delegated

    def post_run_cell(self, result: ExecutionResult) -> None:
        printed = ""
        if self._tee is not None:
            sys.stdout = self._tee._inner
            printed = self._tee.text()
            self._tee = None
        info = getattr(result, "info", None)
        source = str(getattr(info, "raw_cell", "") or "")
        if not source.strip() or source.lstrip().startswith(("%checkpoint", "%%checkpoint")):
            return
        self.executed += 1
        error = getattr(result, "error_in_exec", None) or getattr(result, "error_before_exec", None)
        output = "\n".join(p for p in (_clip(printed, OUTPUT_CHARS), _result_text(result.result)) if p)
        self.cells.append(
            CellRecord(
                number=getattr(result, "execution_count", None),
                source=_clip(source, SOURCE_CHARS),
                output=output,
                error=f"{type(error).__name__}: {_clip(str(error), 300)}" if error is not None else None,
            )
        )
        if len(self.cells) > MAX_CELLS:
            self.cells.pop(0)
            self.dropped += 1

    def reset(self) -> None:
        self.cells.clear()
        self.dropped = 0

    def facts(self, namespace: dict[str, Any], notebook: str) -> ContextFacts:
        """The cells run since the last checkpoint and the namespace, as facts."""
        from infinite_context_brain.core.facts import CommandRun, ContextFacts, Failure

        facts = ContextFacts(source="notebook", variables=summarize_namespace(namespace))
        failing: dict[str, Failure] = {}
        for cell in self.cells:
            check = cell_check(cell.source)
            facts.commands.append(
                CommandRun(
                    command=f"cell [{cell.number}]: {check}",
                    kind="run",
                    check=check,
                    ok=cell.error is None,
                    failure_lines=[cell.error] if cell.error else [],
                )
            )
            if cell.error:
                failing.pop(check, None)
                failing[check] = Failure(check=check, lines=[f"cell [{cell.number}] {cell.error}"])
            else:
                failing.pop(check, None)
                if check not in facts.passed_checks:
                    facts.passed_checks.append(check)
        facts.failures = list(failing.values())
        count = len(self.cells) + self.dropped
        if self.cells:
            last = self.cells[-1]
            result = f" → {_clip(last.output, 200)}" if last.output and not last.error else ""
            facts.last_step = (
                f"{count} cells run in {notebook}; last: [{last.number}] {cell_check(last.source)}"
                + (f" raised {last.error}" if last.error else result)
            )
        return facts


def cell_check(source: str) -> str:
    """A cell's name in the brain: its first code line (a re-run of the cell keeps it)."""
    lines = [ln.strip() for ln in source.splitlines()]
    first = next((ln for ln in lines if ln and not ln.startswith("#")), lines[0] if lines else "")
    return _clip(first, 100)


def summarize_namespace(namespace: dict[str, Any]) -> list[str]:
    items = []
    for name, value in namespace.items():
        if name.startswith("_") or name in _IPYTHON_NAMES or isinstance(value, types.ModuleType):
            continue
        if isinstance(value, (types.FunctionType, type)):
            items.append(f"{name}: {'class' if isinstance(value, type) else 'function'}")
        else:
            items.append(f"{name}: {describe_value(value)}")
    return items[-NAMESPACE_ITEMS:]
