"""WAL checkpoints off the request path (issue 19).

In WAL mode every commit appends pages to the write-ahead log, and SQLite copies them back into
the database file (a checkpoint, with an fsync) inside whichever commit crosses
``wal_autocheckpoint`` pages, so that commit's request waits for it. A compaction of the working
memory at 1k items through MCP took 100-120 ms in some runs and 65-75 in others, its write 48-51
ms against 13-18: the fit is such a checkpoint (inferred from the timings).

SQLite's documentation offers the way out: checkpoint from a thread of its own. Here a daemon
thread, woken by a commit at most once per ``INTERVAL``, runs a PASSIVE checkpoint ``DELAY``
after it was woken (a short-lived process, a hook, has closed by then and leaves the WAL to the
long-lived ones), on a connection of its own: it copies what no reader still needs while requests
go on on the main connection (the sqlite3 module releases the GIL while SQLite works). The
automatic checkpoint stays on as a backstop, at ``BACKSTOP_PAGES``, for writes that outpace the
thread. Measured through MCP at 1k items (SQLite, old and new code in turn, two pairs of runs
each): checkpointing at once, compaction 145 / 190 -> 87 / 75 ms and store p50 1.09 / 1.27 ->
0.92 / 1.03; a second later, in a noisier spell, compaction 111 / 137 -> 90 / 146 and store p50
1.12 / 2.06 -> 1.08 / 1.23 (that checkpoint ran beside the compaction that followed a series of
bulk stores), hence ``DELAY``; as now, on an idle machine, compaction 105 / 116 -> 81 / 80 ms with
store and query p50 within the noise (0.77 / 0.77 -> 0.94 / 0.78, 1.27 / 1.42 -> 1.56 / 1.32).
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from collections.abc import Callable

log = logging.getLogger(__name__)

#: seconds between two background checkpoints while this process writes
INTERVAL = 1.0
#: seconds from the commit that asks for a checkpoint to the checkpoint
DELAY = 0.25
#: WAL pages (4 KiB each) at which a commit checkpoints itself (the thread fell behind)
BACKSTOP_PAGES = 16_000
#: seconds ``close`` waits for a checkpoint in progress
CLOSE_WAIT = 2.0


class Checkpointer:
    """Checkpoints a database file's WAL in a thread of its own, after commits (``wrote``)."""

    def __init__(self, connect: Callable[[], sqlite3.Connection]) -> None:
        self._connect = connect
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._last = float("-inf")

    def wrote(self) -> None:
        """A commit: checkpoint ``DELAY`` from now, unless one was asked for under
        ``INTERVAL`` ago."""
        now = time.monotonic()
        if now - self._last < INTERVAL:
            return
        self._last = now
        with self._lock:
            if self._stopping.is_set():
                return
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="ic-checkpoint", daemon=True)
                self._thread.start()
        self._wake.set()

    def _run(self) -> None:
        conn: sqlite3.Connection | None = None
        try:
            while True:
                self._wake.wait()
                self._wake.clear()
                if self._stopping.wait(DELAY):
                    return
                if conn is None:
                    conn = self._connect()
                conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
        except sqlite3.Error:  # the backstop checkpoints from now on; nothing is lost either way
            log.warning("background WAL checkpoints stopped", exc_info=True)
        finally:
            if conn is not None:
                conn.close()

    def close(self) -> None:
        """Stop the thread (after the checkpoint in progress, ``CLOSE_WAIT`` at most)."""
        with self._lock:
            self._stopping.set()
            thread = self._thread
        self._wake.set()
        if thread is not None:
            thread.join(CLOSE_WAIT)
