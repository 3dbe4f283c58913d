"""Running queued hook records: the worker's loop, and SessionStart's wait for the hand-offs of
the session that just ended.

The spool (``spool.py``) only stores records; whoever runs them hands in the function that does
(``Runner``: ``hooks.run_record``), so this module never imports the handlers. Each record
brings its own settings (``Record.settings``: its routing environment and its folder's
``.env``), passed to the handler explicitly; the process environment and working folder are
never rewritten per record.

What becomes of a record: done (removed); kept for a later run when its store is unreachable or
its settings are broken (``StorageUnavailable``, ``ConfigError``); dropped when its input is
wrong (any other of our errors); moved to ``spool/failed``, redacted, when the handler crashed.
Every failure is kept for the user (``failures``): the next hook of the session says it once.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import AliasChoices

from infinite_context_brain.core.config import ENV_PREFIX, Settings, load_settings
from infinite_context_brain.core.errors import ConfigError, InfiniteContextError, StorageUnavailable
from infinite_context_brain.core.files import FILE_MODE, NotOwned, private_dir
from infinite_context_brain.core.redact import redact

from . import failures, payloads, spool
from .events import BY_COMMAND, Event

log = logging.getLogger("infinite_context_brain.spool")
Outcome = Literal["done", "kept", "dropped", "failed"]
#: seconds the worker waits for more records before it leaves
LINGER_SECONDS = 2.0
_POLL_SECONDS = 0.02
_PATH_FIELDS = ("data_dir", "project_root", "claude_project_dir", "claude_config_dir")


def _field_names(env: Mapping[str, str]) -> dict[str, str]:
    """The Settings fields ``env`` sets, by field name, with the precedence ``Settings`` gives
    the variables (our prefixed name before the seed's, as its docstring says)."""
    given = {name.upper(): value for name, value in env.items() if value.strip()}
    out: dict[str, str] = {}
    for name, info in Settings.model_fields.items():
        alias = info.validation_alias
        choices = [str(c) for c in alias.choices] if isinstance(alias, AliasChoices) else []
        choices = choices or [f"{ENV_PREFIX}{name.upper()}"]
        found = next((given[c.upper()] for c in choices if c.upper() in given), None)
        if found is not None:
            out[name] = found
    return out


def settings_from(env: Mapping[str, str], cwd: str | None) -> Settings:
    """Settings as a hook run with ``env`` in ``cwd`` would load them: ``env``'s values as
    explicit settings (over this process's environment, which holds no routing names), then
    ``cwd``'s ``.env``; relative folders are taken from ``cwd``."""
    values: dict[str, object] = dict(_field_names(env))
    if cwd:
        for name in _PATH_FIELDS:
            value = values.get(name)
            if isinstance(value, str) and not os.path.isabs(os.path.expanduser(value)):
                values[name] = os.path.join(cwd, value)
        url = values.get("store_url")
        if isinstance(url, str) and url.startswith("sqlite:///") and not url.startswith("sqlite:////"):
            values["store_url"] = "sqlite:///" + os.path.join(cwd, url[len("sqlite:///") :])
    return load_settings(_env_file=os.path.join(cwd, ".env") if cwd else None, **values)


@dataclass
class Record:
    """One queued hook call, as read back from its file."""

    path: str
    event: Event
    payload: dict[str, Any]
    project: str | None = None
    cwd: str | None = None
    env: dict[str, str] = field(default_factory=dict)

    def settings(self) -> Settings:
        return settings_from(self.env, self.cwd)

    @classmethod
    def read(cls, claim: spool.Claim) -> Record:
        """The claimed record; ValueError when it is not one."""
        return cls.parse(claim.path, os.pread(claim.fd, os.fstat(claim.fd).st_size, 0))

    @classmethod
    def peek(cls, path: str) -> Record:
        """The record at ``path`` without claiming it (someone may be running it); OSError when
        it is gone, ValueError when it is not a record, ``NotOwned`` when it is foreign."""
        claim = spool.Claim(path, spool.open_record(path))
        try:
            return cls.read(claim)
        finally:
            claim.release()

    @classmethod
    def parse(cls, path: str, raw: bytes) -> Record:
        try:
            data = json.loads(raw)
        except RecursionError:
            raise ValueError("nested too deeply") from None
        if not isinstance(data, dict):
            raise ValueError("not a JSON object")
        event = BY_COMMAND.get(str(data.get("kind")))
        named = spool.kind_of(os.path.basename(path))
        if event is None or (named is not None and named != event.command):
            raise ValueError(f"kind {data.get('kind')!r} does not match its name")
        payload = data.get("payload")
        if not isinstance(payload, dict):
            raise ValueError("payload is not a JSON object")
        env = data.get("env")
        project, cwd = data.get("project"), data.get("cwd")
        return cls(
            path,
            event,
            payloads.clean(payload),
            project if isinstance(project, str) else None,
            cwd if isinstance(cwd, str) else None,
            {str(k): str(v) for k, v in env.items() if spool.routing(str(k))}
            if isinstance(env, dict)
            else {},
        )


Runner = Callable[[Record], None]


def _session(record: Record) -> str | None:
    value = record.payload.get("session_id")
    return value if isinstance(value, str) else None


def outcome_of(exc: BaseException) -> Outcome:
    if isinstance(exc, StorageUnavailable | ConfigError):
        return "kept"
    return "dropped" if isinstance(exc, InfiniteContextError) else "failed"


def keep_failed(claim: spool.Claim) -> str:
    """Move a record whose handler crashed to ``failed/``, its text redacted first (a tool's
    output may hold a secret); returns where it went."""
    failed = private_dir(Path(os.path.dirname(claim.path)) / "failed")
    target = failed / os.path.basename(claim.path)
    raw = os.pread(claim.fd, os.fstat(claim.fd).st_size, 0).decode("utf-8", "replace")
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, FILE_MODE)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(redact(raw))
    claim.done()
    return str(target)


def finish(claim: spool.Claim, event: Event, session: str | None, exc: BaseException | None) -> Outcome:
    """Settle a claimed record after its handler ran (``exc``: what it raised) and keep any
    failure for the user."""
    data_dir = os.path.dirname(os.path.dirname(claim.path))
    if exc is None:
        claim.done()
        failures.resolved(data_dir, event.name)
        return "done"
    outcome = outcome_of(exc)
    message = exc.message if isinstance(exc, InfiniteContextError) else f"{type(exc).__name__}: {exc}"
    fix = exc.fix if isinstance(exc, InfiniteContextError) else None
    if outcome == "kept":
        log.error("hook %s kept for the next run: %s", event.command, message, extra={"fix": fix})
        claim.release()
    elif outcome == "dropped":
        log.error("hook %s: %s", event.command, message, extra={"fix": fix})
        claim.done()
    else:
        log.error("hook %s failed", event.command, exc_info=exc)
        message += f" (the record is kept, redacted, in {keep_failed(claim)})"
    failures.record(data_dir, event.name, message, fix, session)
    return outcome


def replay(claim: spool.Claim, run: Runner) -> Outcome:
    """Run one claimed record with ``run``; what became of it."""
    try:
        record = Record.read(claim)
    except (OSError, ValueError) as exc:
        log.error("spool: unreadable record %s (%s); dropped", claim.path, exc)
        claim.done()
        return "dropped"
    try:
        run(record)
    except Exception as exc:
        return finish(claim, record.event, _session(record), exc)
    return finish(claim, record.event, _session(record), None)


def _claim(folder: str, name: str) -> spool.Claim | None:
    path = os.path.join(folder, name)
    try:
        return spool.claim(path)
    except NotOwned as exc:
        log.error("spool: %s; refused and removed", exc)
        with contextlib.suppress(OSError):
            os.unlink(path)  # our own folder: a planted record goes
        return None


def drain(folder: str, run: Runner, kept: set[str]) -> int:
    """Replay every queued record no one else is running, oldest first; returns how many were
    handled. Records kept for later are added to ``kept`` and not tried again by this caller."""
    handled = 0
    for name in spool.pending(folder):
        if name in kept:
            continue
        claim = _claim(folder, name)
        if claim is None:
            continue
        if replay(claim, run) == "kept":
            kept.add(name)
        else:
            handled += 1
    return handled


@dataclass
class Settled:
    """What SessionStart's wait found: hand-offs it ran or saw finish, and those it left."""

    finished: int = 0
    #: still running elsewhere when the time was up
    running: list[str] = field(default_factory=list)
    #: run and failed here (their failure is kept for the user)
    failed: list[str] = field(default_factory=list)


def settle(folder: str, run: Runner, until: float, wanted: Callable[[Record], bool]) -> Settled:
    """Wait, until the monotonic time ``until``, for the hand-offs still to run or running
    whose record ``wanted`` (this session's project), running here each one no one else holds.
    Other records never hold it up, and a record that fails here is not waited for again."""
    result = Settled()
    passed: set[str] = set()  # not this project's, or run here and failed
    relevant: dict[str, bool] = {}  # decided once per record
    while True:
        waiting = []
        for name in spool.hand_offs(folder):
            if name in passed:
                continue
            path = os.path.join(folder, name)
            if name not in relevant:
                try:
                    relevant[name] = wanted(Record.peek(path))
                except FileNotFoundError:
                    result.finished += 1  # done meanwhile
                    passed.add(name)
                    continue
                except (OSError, ValueError, NotOwned, InfiniteContextError):
                    relevant[name] = True  # unreadable, foreign, or its settings are broken: replay says so
            if not relevant[name]:
                passed.add(name)
                continue
            claim = _claim(folder, name)
            if claim is None:  # someone runs it (the worker, our MCP server): wait for it
                if os.path.exists(path):
                    waiting.append(name)
                else:
                    result.finished += 1
                continue
            if replay(claim, run) == "done":
                result.finished += 1
            else:
                passed.add(name)
                result.failed.append(name)
        if not waiting:
            return result
        if time.monotonic() >= until:
            result.running = waiting
            return result
        time.sleep(_POLL_SECONDS)


def work(folder: str, run: Runner, linger: float = LINGER_SECONDS) -> None:
    """The worker's life: replay, linger for more, leave; look again after leaving."""
    kept: set[str] = set()  # store unreachable, settings broken: the next worker tries again
    while True:
        alive = spool.hold_alive(folder)
        if alive is None:
            return  # another worker is alive
        try:
            idle_since = time.monotonic()
            while time.monotonic() - idle_since < linger:
                if drain(folder, run, kept) > 0:
                    idle_since = time.monotonic()
                time.sleep(0.05)
        finally:
            os.close(alive)
        if not [n for n in spool.pending(folder) if n not in kept]:
            return
