"""The MCP server's one ProjectBrain, opened once (by the warm-up, ``warm.py``, as the server
starts serving, else by the first call) and shared by every tool; a call that comes while it opens
waits for it (the lock below), it is never opened twice at once."""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from infinite_context_brain.core.errors import InfiniteContextError, StorageUnavailable

if TYPE_CHECKING:
    from infinite_context_brain.core.brain import ProjectBrain

log = logging.getLogger(__name__)
#: how long stopping waits for hook work queued by ``BrainHolder.later``: an observation takes
#: milliseconds; a Stop hand-off still running is left (Claude Code waits for its MCP servers
#: to exit, and the SessionEnd hook redoes the hand-off from the transcript cursor)
LATER_WAIT_SECONDS = 0.1


class BrainHolder:
    """Opens the brain once, on first use; keeps the advisory session lock fresh."""

    def __init__(self, factory: Callable[[], ProjectBrain]) -> None:
        self._factory = factory
        self._brain: ProjectBrain | None = None
        self._lock = threading.Lock()
        self._owner = ""
        self._claimed_at = 0.0
        self._jobs: queue.SimpleQueue[tuple[Callable[[ProjectBrain], None], str]] | None = None
        self._pending = 0
        # its own lock: queueing a hook's job (on the event loop) never waits for the brain to open
        self._idle = threading.Condition(threading.Lock())
        self._closed = threading.Event()  # set by ``close``

    @property
    def closing(self) -> bool:
        """The server is stopping: the store may close under work still running."""
        return self._closed.is_set()

    @property
    def ready(self) -> bool:
        """The brain is open: a call now waits for nothing but its own work."""
        return self._brain is not None

    def get(self) -> ProjectBrain:
        with self._lock:
            if self._brain is None:
                if self.closing:  # opening it again would leave a store (and lock) nobody closes
                    raise StorageUnavailable("the MCP server is stopping", fix="start a new session")
                # (the brain module loads here, in the warm-up thread, not on the way to `initialize`)
                from infinite_context_brain.core.brain import default_owner

                self._brain = self._factory()
                self._owner = default_owner("mcp")
            brain = self._brain
            if time.monotonic() - self._claimed_at > brain.settings.lock_ttl_seconds / 3:
                self._claimed_at = time.monotonic()
                brain.claim(self._owner)
        return brain

    def later(self, job: Callable[[ProjectBrain], None], label: str, delay: float = 0.0) -> None:
        """Run ``job`` on the brain after the current call has answered, one job at a time, in
        order; a failure is logged. ``close`` lets queued jobs finish first (briefly). With
        ``delay``, the job is queued that many seconds from now, and dropped if the server stops
        before (for work another path redoes: the hand-off)."""
        if delay > 0:
            timer = threading.Timer(delay, self._queue_unless_closing, (job, label))
            timer.daemon = True
            timer.start()
            return
        self._queue(job, label)

    def _queue_unless_closing(self, job: Callable[[ProjectBrain], None], label: str) -> None:
        if not self.closing:
            self._queue(job, label)

    def _queue(self, job: Callable[[ProjectBrain], None], label: str) -> None:
        with self._idle:
            if self._jobs is None:
                self._jobs = queue.SimpleQueue()
                threading.Thread(target=self._work, args=(self._jobs,), name="ic-later", daemon=True).start()
            self._pending += 1
            self._jobs.put((job, label))

    def _work(self, jobs: queue.SimpleQueue[tuple[Callable[[ProjectBrain], None], str]]) -> None:
        while True:
            job, label = jobs.get()
            try:
                job(self.get())
            except Exception as exc:
                if self.closing:  # the store closed under it: the next hand-off redoes it
                    log.info("%s left unfinished: the server stopped", label)
                elif isinstance(exc, InfiniteContextError):
                    log.error("%s: %s", label, exc.message, extra={"fix": exc.fix, "code": exc.code})
                else:
                    log.exception("%s failed", label)
            finally:
                with self._idle:
                    self._pending -= 1
                    if not self._pending:
                        self._idle.notify_all()

    def close(self, wait: float = LATER_WAIT_SECONDS) -> None:
        self._closed.set()
        with self._idle:
            self._idle.wait_for(lambda: not self._pending, wait)
        with self._lock:
            if self._brain is not None:
                try:
                    self._brain.release(self._owner)
                finally:
                    self._brain.close()
                self._brain = None
