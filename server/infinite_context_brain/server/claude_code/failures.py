"""Hook failures the user hears about.

A hook must never break the session, so a failing one exits 0 and Claude Code shows nothing; and
a deferred hand-off fails in the worker, after its hook returned. So every failure is kept:
appended to ``<data dir>/hooks.log`` (JSON lines, what ``doctor`` shows the last of) and, until a
hook succeeds again, held in ``<data dir>/hook-failure.json``. The next hook of each Claude Code
session that has not been told yet says it once, as the hook output's ``systemMessage`` (shown
to the user, not the model): what failed and the fix (SessionStart's and hand-offs' failures;
a lost observation only goes to the log, the next hand-off recovers it).

Standard library only: the deferred hooks read the notice on every tool call (one ``stat`` when
nothing failed).
"""

from __future__ import annotations

import contextlib
import json
import os
import time

from .events import BY_NAME

#: ``typing.TYPE_CHECKING`` without importing ``typing`` (this module is on every hook's path)
TYPE_CHECKING = False

if TYPE_CHECKING:
    from typing import Any

LOG_NAME = "hooks.log"
CURRENT_NAME = "hook-failure.json"
_LOG_LIMIT = 1_000_000
#: sessions told about one failure (older ones are forgotten first)
_TOLD_KEPT = 50


def _write_private(path: str, data: bytes) -> None:
    tmp = f"{path}.{os.getpid()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        os.write(fd, data)
    except BaseException:
        os.close(fd)
        os.unlink(tmp)
        raise
    os.close(fd)
    os.replace(tmp, path)


def text(event: str, message: str, fix: str | None) -> str:
    """The one line the user reads."""
    what = {
        "SessionStart": "could not load this project's brain",
        "Stop": "could not save the hand-off after the last answer",
        "SessionEnd": "could not save the session's hand-off",
        "PreCompact": "could not save the hand-off before compaction",
        "PostToolUse": "could not store a tool result's observation",
    }.get(event, f"hook {event} failed")
    line = f"infinite-context {what}: {message.rstrip('.')}."
    return line + (f" Fix: {fix}" if fix else " Run `infinite-context doctor` for details.")


def record(data_dir: str, event: str, message: str, fix: str | None, session: str | None) -> None:
    """Keep a failure: a log line, and the failure held until a hook of its kind works again
    (told to each session once when it is SessionStart's or a hand-off's: a lost observation
    is recovered by the next hand-off)."""
    now = time.time()
    entry = {
        "ts": time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime(now)),
        "at": now,
        "event": event,
        "message": message,
        "fix": fix,
        "session": session,
    }
    try:
        os.makedirs(data_dir, mode=0o700, exist_ok=True)
        log = os.path.join(data_dir, LOG_NAME)
        try:
            if os.stat(log).st_size > _LOG_LIMIT:
                os.truncate(log, 0)
        except FileNotFoundError:
            pass
        fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            os.write(fd, (json.dumps(entry) + "\n").encode())
        finally:
            os.close(fd)
        current = _current(data_dir)
        told = current.get("told", []) if current and current.get("event") == event else []
        known = BY_NAME.get(event)
        held = {**entry, "told": told, "tell": known is None or known.action != "observe"}
        _write_private(os.path.join(data_dir, CURRENT_NAME), json.dumps(held).encode())
    except OSError:
        pass  # a data folder that cannot be written: the hook's own log line is all there is


def _current(data_dir: str) -> dict[str, Any] | None:
    try:
        fd = os.open(os.path.join(data_dir, CURRENT_NAME), os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        raw = os.read(fd, 65536)
    finally:
        os.close(fd)
    try:
        value = json.loads(raw)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def notice(data_dir: str, session: str | None) -> str | None:
    """The unresolved failure as the user should read it, once per ``session`` (None: nothing
    to say). Marks the session as told."""
    current = _current(data_dir)
    if current is None or current.get("tell") is False:
        return None
    told = [s for s in current.get("told", []) if isinstance(s, str)]
    key = session or "-"
    if key in told:
        return None
    current["told"] = [*told, key][-_TOLD_KEPT:]
    try:
        _write_private(os.path.join(data_dir, CURRENT_NAME), json.dumps(current).encode())
    except OSError:
        return None  # cannot remember telling: better silent than on every tool call
    return text(str(current.get("event")), str(current.get("message")), current.get("fix"))


def told(data_dir: str, session: str | None) -> None:
    """``session`` has been told about the current failure (its own hook output said it)."""
    notice(data_dir, session)


def resolved(data_dir: str, event: str) -> None:
    """A hook of ``event`` succeeded: a failure of the same kind (``events``: the action, so any
    hand-off for a failed hand-off) no longer needs telling. One ``stat`` when none is held."""
    path = os.path.join(data_dir, CURRENT_NAME)
    if not os.path.exists(path):
        return
    current = _current(data_dir)
    failed = BY_NAME.get(str(current.get("event"))) if current else None
    succeeded = BY_NAME.get(event)
    if current is None or (
        failed is not None and succeeded is not None and failed.action == succeeded.action
    ):
        with contextlib.suppress(OSError):
            os.unlink(path)


def last(data_dir: str) -> tuple[dict[str, Any], bool] | None:
    """The last failure in the log and whether it is still unresolved (for ``doctor``)."""
    try:
        with open(os.path.join(data_dir, LOG_NAME), "rb") as handle:
            handle.seek(max(0, os.fstat(handle.fileno()).st_size - 65536))
            lines = handle.read().splitlines()
    except OSError:
        return None
    for line in reversed(lines):
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict):
            return entry, _current(data_dir) is not None
    return None


def age(entry: dict[str, Any]) -> str:
    """How long ago a log entry was written, for people (``3 min ago``)."""
    then = entry.get("at")
    if not isinstance(then, int | float):
        return "at an unknown time"
    seconds = max(0, int(time.time() - then))
    for size, unit in ((86400, "d"), (3600, "h"), (60, "min")):
        if seconds >= size:
            return f"{seconds // size} {unit} ago"
    return f"{seconds} s ago"


def combined(*outputs: dict[str, Any] | None) -> dict[str, Any] | None:
    """Hook outputs as one: later keys win, except the messages shown to the user
    (``systemMessage``), which are all kept, a line each."""
    merged: dict[str, Any] = {}
    said: list[str] = []
    for output in outputs:
        if output:
            merged.update(output)
            if output.get("systemMessage"):
                said.append(str(output["systemMessage"]))
    if said:
        merged["systemMessage"] = "\n".join(said)
    return merged or None


def with_message(output: dict[str, Any] | None, message: str | None) -> dict[str, Any] | None:
    """``output`` with ``message`` added to what the user is shown."""
    return combined(output, {"systemMessage": message} if message else None)
