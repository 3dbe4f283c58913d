"""Stop a stdio server at once on SIGINT or SIGTERM, after releasing what it holds.

Both servers block in threads that read stdin (the MCP SDK, pygls), so the default handling
does not work: SIGINT raised KeyboardInterrupt into an event loop that waited on those threads
(three Ctrl-C and a traceback), and interpreter shutdown with a reader thread still inside
``stdin.read`` aborted with "Fatal Python error". Claude Code stops its MCP servers with SIGTERM,
which used to leave the advisory session lock to a dead process for its whole TTL.

The handler runs ``cleanup`` (release the lock, close the store) in a helper thread, waits at
most ``CLEANUP_SECONDS`` for it (the main thread may itself hold a lock the cleanup needs), and
leaves with ``os._exit``: no traceback, no interpreter shutdown to race with. The helper logs the
one "stopped" line once the cleanup is done: a signal can arrive while the main thread is itself
importing the log formatter's redaction (the first log line loads it), and a line logged from the
handler then met that module half-made ("--- Logging error ---" and a traceback on stderr; the
formatter now holds such a line back instead); in the helper, the line waits for the import.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from types import FrameType

log = logging.getLogger("infinite_context_brain.server")
CLEANUP_SECONDS = 0.7


@contextmanager
def stop_on_signals(cleanup: Callable[[], None], name: str) -> Iterator[None]:
    def stop(signum: int, _frame: FrameType | None) -> None:
        said = f"{name} stopped ({signal.Signals(signum).name})"
        worker = threading.Thread(target=_quietly, args=(cleanup, said), daemon=True)
        worker.start()
        worker.join(CLEANUP_SECONDS)
        if worker.is_alive():  # (a line logged here may be held back: see the module)
            log.warning("%s: clean-up still running after %s s; stopping anyway", said, CLEANUP_SECONDS)
        for stream in (sys.stderr, sys.stdout):
            with suppress(OSError, ValueError):
                stream.flush()
        os._exit(0)

    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _quietly(cleanup: Callable[[], None], said: str) -> None:
    try:
        cleanup()
    except Exception:  # stopping anyway; say why the lock may stay held until its TTL
        log.exception("clean-up on stop failed")
    log.info(said)
