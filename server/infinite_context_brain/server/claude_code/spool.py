"""The queue of deferred hooks: PostToolUse, Stop and SessionEnd return at once; a worker runs them.

Claude Code waits for a command hook (or, for an ``async`` one, cancels it when a ``-p`` run ends,
and then skips SessionEnd). So these hooks only queue their payload and leave: a record is one
file in ``<data dir>/spool`` (folder 0700, files 0600) named ``<time>-<pid>.<sub-command>.rec``,
written under a temporary name and renamed, so a reader never sees half a record and concurrent
hooks never collide. A record holds the hook's payload, its working folder, ``--project`` and
routing environment (the ``INFINITE_CONTEXT_*`` names, ``REDIS_URL``, ``PROJECT_ROOT``,
``CLAUDE_*`` folders; never a key): everything its handler's settings are built from.

Whoever runs a record first claims it (an exclusive ``flock`` on the record file) and removes it
only after its handler returned, so a killed process loses nothing and two never run one record.
The MCP server queues the hand-offs of its ``mcp_tool`` Stop hooks here too, claimed from the
start (``hold``): so "the hand-offs still running" is one thing, the hand-off records in this
folder, whoever holds them (``hand_offs``), and SessionStart waits for exactly those.

The worker (``python -m infinite_context_brain.server.claude_code.worker <folder>``, started
detached by a hook when none is alive; ``replay.py`` is its loop) holds ``alive.lock`` for its
life. Nothing foreign is used: the data folder, this folder and each record must belong to the
user and be writable by no one else (``NotOwned`` otherwise).

This module needs nothing beyond the standard library (``core.files`` and ``events`` are the
same): the hook path runs on every tool call. The
folder comes from ``INFINITE_CONTEXT_DATA_DIR`` in the environment or the platform's data folder
(``Settings.resolved_data_dir``'s default); a data folder set only in ``.env`` is not read here
(parsing it would cost every hook its speed), which only moves the queue, not the brain.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import stat
import sys
import time

from infinite_context_brain.core.files import NotOwned, foreign, owned_dir

from .events import BY_COMMAND

#: ``typing.TYPE_CHECKING`` without importing ``typing`` (this module is on every hook's path)
TYPE_CHECKING = False

if TYPE_CHECKING:
    from collections.abc import Mapping

_ROUTING_NAMES = frozenset(
    {"REDIS_URL", "PROJECT_ROOT", "CLAUDE_PROJECT_DIR", "CLAUDE_CONFIG_DIR", "LOG_LEVEL", "GEMINI_MODEL"}
)
_SECRET_MARKS = ("KEY", "TOKEN", "SECRET", "PASSWORD")
#: the record file's suffix; a name is ``<time>-<pid>.<sub-command>.rec``
SUFFIX = ".rec"
_LOG_LIMIT = 1_000_000
RECORD_VERSION = 2


def routing(name: str) -> bool:
    """An environment variable a record carries: it decides which brain and store a hook uses."""
    if not (name.startswith("INFINITE_CONTEXT_") or name in _ROUTING_NAMES):
        return False
    return not any(mark in name.upper() for mark in _SECRET_MARKS)


def data_dir() -> str:
    """``Settings.resolved_data_dir()`` as the environment gives it, without pydantic."""
    given = os.environ.get("INFINITE_CONTEXT_DATA_DIR", "").strip()
    if given:
        return os.path.abspath(os.path.expanduser(given))
    if sys.platform.startswith("linux"):  # platformdirs' rule, without importing it
        base = os.environ.get("XDG_DATA_HOME", "").strip() or os.path.expanduser("~/.local/share")
        return os.path.join(base, "infinite-context")
    from platformdirs import user_data_dir

    return str(user_data_dir("infinite-context", appauthor=False))


def spool_dir() -> str:
    return os.path.join(data_dir(), "spool")


def open_spool(folder: str | None = None, *, create: bool = False) -> str:
    """The spool folder, checked with its data folder (``files.owned_dir``)."""
    folder = folder or spool_dir()
    owned_dir(os.path.dirname(folder), create=create)
    return owned_dir(folder, create=create)


def kind_of(name: str) -> str | None:
    """The sub-command a record's file name says (None: not a record name this version wrote)."""
    parts = name.split(".")
    if len(parts) == 3 and "." + parts[2] == SUFFIX and parts[1] in BY_COMMAND:
        return parts[1]
    return None


def pending(folder: str, kinds: tuple[str, ...] | None = None) -> list[str]:
    """Queued record names, oldest first (``kinds``: only those sub-commands; a name of an older
    version's form counts as any kind: its record says)."""
    try:
        names = os.listdir(folder)
    except FileNotFoundError:
        return []
    records = (n for n in names if n.endswith(SUFFIX) and not n.startswith("."))
    return sorted(n for n in records if kinds is None or kind_of(n) in (*kinds, None))


def hand_offs(folder: str) -> list[str]:
    """The hand-offs still to run or running (``events``: action ``hand-off``), oldest first."""
    return pending(folder, tuple(e.command for e in BY_COMMAND.values() if e.action == "hand-off"))


def _record_bytes(kind: str, payload: bytes, project: str | None, env: Mapping[str, str], cwd: str) -> bytes:
    head = json.dumps(
        {
            "v": RECORD_VERSION,
            "kind": kind,
            "cwd": cwd,
            "project": project,
            "env": {name: value for name, value in env.items() if routing(name)},
            "at": time.time(),
        }
    )
    # Raw line breaks in valid JSON are whitespace between tokens (inside strings they must be
    # escaped), so the payload goes in as it came, on one line.
    body = payload.strip().replace(b"\r", b" ").replace(b"\n", b" ")
    return head[:-1].encode() + b', "payload": ' + body + b"}\n"


def _write_new(tmp: str, data: bytes) -> int:
    """Create ``tmp`` (0600, never through a link) holding ``data``; returns its open fd. Nothing
    is left behind when writing fails (a full disk): the partial file is removed."""
    fd = os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    except BaseException:
        os.close(fd)
        os.unlink(tmp)
        raise
    return fd


def enqueue(
    kind: str,
    payload: bytes,
    project: str | None = None,
    folder: str | None = None,
    *,
    hold: bool = False,
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
) -> Claim:
    """Queue one hook payload (``payload``: Claude Code's JSON object, as valid JSON text) as a
    hook run with ``env`` in ``cwd`` (default: this process's) and return its claim: released
    at once, or held (``hold``) by the caller, who then runs it (``Claim.done``) or lets it go
    for the worker (``Claim.release``)."""
    if kind not in BY_COMMAND:
        raise ValueError(f"{kind!r} is not a hook sub-command")
    folder = open_spool(folder, create=True)
    name = f"{time.time_ns():020d}-{os.getpid()}.{kind}{SUFFIX}"
    tmp, final = os.path.join(folder, f".{name}.tmp"), os.path.join(folder, name)
    record = _record_bytes(kind, payload, project, os.environ if env is None else env, cwd or os.getcwd())
    fd = _write_new(tmp, record)
    claim = Claim(final, fd)
    try:
        if hold:
            fcntl.flock(fd, fcntl.LOCK_EX)  # taken before the name appears: no one else gets it
        os.rename(tmp, final)
    except BaseException:
        claim.release()
        os.unlink(tmp)
        raise
    if not hold:
        claim.release()
    return claim


class Claim:
    """A record and the open file holding its lock (``fd`` -1: released)."""

    __slots__ = ("fd", "path")

    def __init__(self, path: str, fd: int = -1) -> None:
        self.path = path
        self.fd = fd

    def release(self) -> None:
        """Let the record go (it stays queued for whoever comes next)."""
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def done(self) -> None:
        """The record's handler returned: remove it, then let go."""
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)
        self.release()


def open_record(path: str) -> int:
    """A read-only fd on the record at ``path``: a plain file of the user's own that no one else
    can write (``NotOwned`` otherwise; FileNotFoundError when it is gone). Never follows a link,
    never blocks (a FIFO in its place)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except FileNotFoundError:
        raise
    except OSError as exc:  # ELOOP: a symlink in place of a record; EISDIR
        raise NotOwned(f"record {path} is not a plain file ({exc.strerror})") from None
    info = os.fstat(fd)
    problem = "not a plain file" if not stat.S_ISREG(info.st_mode) else foreign(info)
    if problem is not None:
        os.close(fd)
        raise NotOwned(f"record {path} is {problem}")
    return fd


def claim(path: str) -> Claim | None:
    """The record at ``path`` claimed by this process, or None when someone else holds it or it
    is gone. Raises ``NotOwned`` for a record that is not the user's own (``open_record``)."""
    try:
        fd = open_record(path)
    except FileNotFoundError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        # Claimed after its owner removed it (done): the lock is on a file no longer queued.
        if os.stat(path, follow_symlinks=False).st_ino != os.fstat(fd).st_ino:
            raise FileNotFoundError(path)
    except (BlockingIOError, FileNotFoundError):
        os.close(fd)
        return None
    except BaseException:
        os.close(fd)
        raise
    return Claim(path, fd)


def _try_lock(path: str) -> int | None:
    """An fd holding an exclusive flock on ``path``, or None when someone else holds it."""
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


def hold_alive(folder: str) -> int | None:
    """``alive.lock`` for a worker's life (None: another worker is alive)."""
    return _try_lock(os.path.join(folder, "alive.lock"))


def ensure_worker(folder: str) -> None:
    """Start a detached worker unless one is alive (it outlives Claude Code and this hook). Its
    environment has no routing names: each record brings its own."""
    if worker_alive(folder):
        return
    log = os.path.join(folder, "worker.log")
    try:
        if os.stat(log).st_size > _LOG_LIMIT:
            os.truncate(log, 0)
    except FileNotFoundError:
        pass
    env = {name: value for name, value in os.environ.items() if not routing(name) or "LOG_LEVEL" in name}
    os.posix_spawn(
        sys.executable,
        [sys.executable, "-m", "infinite_context_brain.server.claude_code.worker", folder],
        env,
        file_actions=[
            (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
            (os.POSIX_SPAWN_OPEN, 1, log, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o600),
            (os.POSIX_SPAWN_DUP2, 1, 2),
        ],
        setsid=True,  # its own session: Claude Code's clean-up of the hook does not reach it
    )


def defer(kind: str, payload: bytes, project: str | None = None) -> None:
    """The deferred hook itself: queue, make sure a worker runs. ``payload`` must already be
    checked (``payloads.parse``). Raises OSError when there is no queue, ``NotOwned`` when
    the folder is not the user's own."""
    folder = open_spool(create=True)
    enqueue(kind, payload, project, folder)
    ensure_worker(folder)
