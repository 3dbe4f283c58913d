"""Deferred hooks: PostToolUse, Stop and SessionEnd return at once; one worker runs them.

Claude Code waits for a command hook (or, for an ``async`` one, cancels it when a ``-p`` run ends,
and then skips SessionEnd). So these hooks only queue their payload and leave: a record is one
file in ``<data dir>/spool`` (folder 0700, files 0600), written under a temporary name and renamed,
so a reader never sees half a record and concurrent hooks never collide. Records are only ever
added by hooks and removed by the worker once their handler has run; names sort by time.

The worker (``python -m infinite_context_brain.server.claude_code.spool <folder>``, started
detached by the hook when none is alive) replays each record as the hook would have run it inline: the
hook's working
folder, ``--project`` and routing environment (the ``INFINITE_CONTEXT_*`` names, ``REDIS_URL``,
``PROJECT_ROOT``, ``CLAUDE_*`` folders; never a key), then ``hooks.HANDLERS``. A record is
removed only after its handler returned, so a killed worker loses nothing (the next one replays
it; storing an observation and the transcript hand-off are both idempotent). A record whose store
is unreachable or whose settings are broken stays for the next worker; one whose payload is wrong
is dropped with an error line; one that crashed the handler moves to ``spool/failed``. The
worker's log is ``spool/worker.log``.

Two locks: ``alive.lock`` is held by the worker for its whole life (a hook starts a worker only
when it is free), ``busy.lock`` while records are being replayed (``settle`` takes it to replay
pending hand-offs in the calling process when no worker is at it). The worker lingers a moment
for the next tool call, then leaves; after letting go of ``alive.lock`` it looks once more, so a
record queued while it was leaving is never stranded.

This module imports only the standard library at the top: the hook path runs on every tool call.
The spool folder comes from ``INFINITE_CONTEXT_DATA_DIR`` in the environment or the platform's data
folder (``Settings.resolved_data_dir``'s default); a data folder set only in ``.env`` is not read
here (parsing it would cost every hook its speed), which only moves the queue, not the brain.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress

#: Claude Code's event names -> our sub-commands (the installer wires exactly these; both
#: spellings are accepted on the command line). Here, not in ``hooks``, so ``launch`` reads it
#: without importing logging.
EVENTS = {
    "SessionStart": "session-start",
    "SessionEnd": "session-end",
    "PreCompact": "pre-compact",
    "PostToolUse": "post-tool-use",
    "Stop": "stop",
}
#: hook sub-commands that are queued and run by the worker
DEFERRED = ("post-tool-use", "stop", "session-end")
#: hand-offs a new session must see before it resumes (``settle``)
HAND_OFFS = ("stop", "session-end")
_ROUTING_NAMES = frozenset(
    {"REDIS_URL", "PROJECT_ROOT", "CLAUDE_PROJECT_DIR", "CLAUDE_CONFIG_DIR", "LOG_LEVEL", "GEMINI_MODEL"}
)
_SECRET_MARKS = ("KEY", "TOKEN", "SECRET", "PASSWORD")
#: seconds the worker waits for more records before it leaves
LINGER_SECONDS = 2.0
_LOG_LIMIT = 1_000_000


def _routing(name: str) -> bool:
    if not (name.startswith("INFINITE_CONTEXT_") or name in _ROUTING_NAMES):
        return False
    return not any(mark in name.upper() for mark in _SECRET_MARKS)


def data_dir() -> str:
    """``Settings.resolved_data_dir()`` as the environment gives it, without pydantic."""
    given = os.environ.get("INFINITE_CONTEXT_DATA_DIR", "").strip()
    if given:
        return os.path.expanduser(given)
    if sys.platform.startswith("linux"):  # platformdirs' rule, without importing it
        base = os.environ.get("XDG_DATA_HOME", "").strip() or os.path.expanduser("~/.local/share")
        return os.path.join(base, "infinite-context")
    from platformdirs import user_data_dir

    return user_data_dir("infinite-context", appauthor=False)


def spool_dir() -> str:
    return os.path.join(data_dir(), "spool")


def _check_payload(kind: str, raw: bytes) -> str | None:
    """What is wrong with the payload (None: fine), checked before it is queued."""
    import json

    try:
        payload = json.loads(raw) if raw.strip() else None
    except ValueError as exc:
        return f"stdin is not JSON ({exc}); nothing done"
    if not isinstance(payload, dict):
        return "expected a JSON object on stdin from Claude Code; nothing done"
    if kind == "post-tool-use":
        for name in ("tool_use_id", "tool_name"):
            if not isinstance(payload.get(name), str) or not payload.get(name):
                return f"{name}: missing from the hook payload (configure this as a PostToolUse hook)"
    return None


def enqueue(kind: str, raw: bytes, project: str | None = None, folder: str | None = None) -> str:
    """Queue one hook payload (``raw``: Claude Code's JSON object) and return the record's path."""
    import json

    folder = folder or spool_dir()
    if not os.path.isdir(folder):
        os.makedirs(os.path.dirname(folder), mode=0o700, exist_ok=True)  # the data dir, if new
        os.makedirs(folder, mode=0o700, exist_ok=True)
    env = {name: value for name, value in os.environ.items() if _routing(name)}
    head = json.dumps(
        {"v": 1, "kind": kind, "cwd": os.getcwd(), "project": project, "env": env, "at": time.time()}
    )
    # Raw line breaks in valid JSON are whitespace between tokens (inside strings they must be
    # escaped), so the payload goes in as it came, on one line.
    body = raw.strip().replace(b"\r", b" ").replace(b"\n", b" ")
    record = head[:-1].encode() + b', "payload": ' + body + b"}\n"
    name = f"{time.time_ns():020d}-{os.getpid()}-{kind}"
    tmp = os.path.join(folder, f".{name}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        view = memoryview(record)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)
    final = os.path.join(folder, name + ".rec")
    os.rename(tmp, final)
    return final


def pending(folder: str, kinds: tuple[str, ...] | None = None) -> list[str]:
    """Queued record names, oldest first (``kinds``: only those hooks)."""
    try:
        names = os.listdir(folder)
    except FileNotFoundError:
        return []
    return sorted(
        n for n in names if n.endswith(".rec") and (kinds is None or n[:-4].rsplit("-", 1)[-1] in kinds)
    )


def _try_lock(path: str) -> int | None:
    """An fd holding an exclusive flock on ``path``, or None when someone else holds it."""
    import fcntl

    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    return fd


def worker_alive(folder: str) -> bool:
    if not os.path.isdir(folder):
        return False
    fd = _try_lock(os.path.join(folder, "alive.lock"))
    if fd is None:
        return True
    os.close(fd)
    return False


def ensure_worker(folder: str) -> None:
    """Start a detached worker unless one is alive (it outlives Claude Code and this hook)."""
    if worker_alive(folder):
        return
    log = os.path.join(folder, "worker.log")
    try:
        if os.stat(log).st_size > _LOG_LIMIT:
            os.truncate(log, 0)
    except FileNotFoundError:
        pass
    os.posix_spawn(
        sys.executable,
        [sys.executable, "-m", "infinite_context_brain.server.claude_code.spool", folder],
        os.environ,
        file_actions=[
            (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
            (os.POSIX_SPAWN_OPEN, 1, log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600),
            (os.POSIX_SPAWN_DUP2, 1, 2),
        ],
        setsid=True,  # its own session: Claude Code's clean-up of the hook does not reach it
    )


def defer(kind: str, raw: bytes, project: str | None = None) -> str | None:
    """The deferred hook itself: check, queue, make sure a worker runs. Returns an error message
    for the hook's log (None: queued)."""
    problem = _check_payload(kind, raw)
    if problem is not None:
        return problem
    folder = spool_dir()
    enqueue(kind, raw, project, folder)
    ensure_worker(folder)
    return None


# ---- the worker side (imports the handlers lazily) ------------------------------------------


@contextmanager
def _as_recorded(record: dict[str, object]) -> Iterator[None]:
    """The hook's routing environment and working folder, put back afterwards."""
    saved_env, saved_cwd = dict(os.environ), os.getcwd()
    env = record.get("env")
    env = env if isinstance(env, dict) else {}
    for name in [n for n in os.environ if _routing(n)]:
        del os.environ[name]
    os.environ.update({str(k): str(v) for k, v in env.items()})
    try:
        cwd = record.get("cwd")
        if isinstance(cwd, str) and os.path.isdir(cwd):
            os.chdir(cwd)
        yield
    finally:
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)


def replay(path: str) -> str:
    """Run one record's handler; returns what became of it: done, kept, dropped or failed."""
    import json
    import logging
    from pathlib import Path

    from infinite_context_brain.core.errors import ConfigError, InfiniteContextError, StorageUnavailable

    from .hooks import HANDLERS

    log = logging.getLogger("infinite_context_brain.spool")
    try:
        with open(path, "rb") as handle:
            record = json.loads(handle.read())
        kind, payload = record["kind"], record["payload"]
        handler = HANDLERS[kind]
        if not isinstance(payload, dict):
            raise ValueError("payload is not a JSON object")
    except (OSError, ValueError, KeyError, TypeError) as exc:
        log.error("spool: unreadable record %s (%s); dropped", path, exc)
        _unlink(path)
        return "dropped"
    project = record.get("project")
    try:
        with _as_recorded(record):
            handler(payload, Path(project) if isinstance(project, str) else None)
    except (StorageUnavailable, ConfigError) as exc:
        log.error("spool: %s kept for the next run: %s", kind, exc.message, extra={"fix": exc.fix})
        return "kept"
    except InfiniteContextError as exc:
        log.error("hook %s: %s", kind, exc.message, extra={"fix": exc.fix, "code": exc.code})
        _unlink(path)
        return "dropped"
    except Exception:
        log.exception("hook %s failed; record moved to spool/failed", kind)
        failed = os.path.join(os.path.dirname(path), "failed")
        os.makedirs(failed, mode=0o700, exist_ok=True)
        os.replace(path, os.path.join(failed, os.path.basename(path)))
        return "failed"
    _unlink(path)
    return "done"


def _unlink(path: str) -> None:
    with suppress(FileNotFoundError):
        os.unlink(path)


def drain(folder: str, kinds: tuple[str, ...] | None = None, kept: set[str] | None = None) -> int:
    """Replay what is queued (``kinds``: only those) unless another process is replaying; returns
    how many records were handled (-1: busy elsewhere). Records kept for later are added to
    ``kept`` and not tried again by this caller."""
    busy = _try_lock(os.path.join(folder, "busy.lock"))
    if busy is None:
        return -1
    handled, kept = 0, kept if kept is not None else set()
    try:
        while True:
            names = [n for n in pending(folder, kinds) if n not in kept]
            if not names:
                return handled
            for name in names:
                if replay(os.path.join(folder, name)) == "kept":
                    kept.add(name)
                else:
                    handled += 1
    finally:
        os.close(busy)


def settle(timeout: float = 5.0, folder: str | None = None) -> bool:
    """Wait until no hand-off is queued (SessionStart after /clear must see the SessionEnd that
    just ran), replaying them here when no worker is at it. True when none is left."""
    folder = folder or spool_dir()
    deadline = time.monotonic() + timeout
    while pending(folder, HAND_OFFS):
        if drain(folder, HAND_OFFS) >= 0 and not pending(folder, HAND_OFFS):
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def work(folder: str, linger: float = LINGER_SECONDS) -> None:
    """The worker's life: replay, linger for more, leave; look again after leaving."""
    kept: set[str] = set()  # store unreachable, settings broken: the next worker tries again
    while True:
        alive = _try_lock(os.path.join(folder, "alive.lock"))
        if alive is None:
            return  # another worker is alive
        try:
            idle_since = time.monotonic()
            while time.monotonic() - idle_since < linger:
                if drain(folder, kept=kept) > 0:
                    idle_since = time.monotonic()
                time.sleep(0.05)
        finally:
            os.close(alive)
        if not [n for n in pending(folder) if n not in kept]:
            return


def main(argv: list[str]) -> int:
    from infinite_context_brain.core.logs import level_from_env, setup_logging

    setup_logging(level_from_env())
    work(argv[0] if argv else spool_dir())
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
