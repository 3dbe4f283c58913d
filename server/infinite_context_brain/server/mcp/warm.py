"""Open the brain in the background once the server starts serving.

Opening the brain (the core's imports, settings, the store and its advisory lock, working
memory) takes tens of milliseconds, and longer on a slow or unreachable store. Done
in a daemon thread started by the server's lifespan, it is usually finished before the client's
first tool call, and never delays `initialize`; a call that comes earlier waits for it
(``BrainHolder.get`` holds its lock while the brain opens) rather than doing the work twice.

Warming only reads: a project's id file is written on the first write. A failure is logged and
ignored: the first call then opens the brain itself and reports the error (a bad setting, an
unreachable store).
"""

from __future__ import annotations

import logging
import threading

from infinite_context_brain.core.errors import InfiniteContextError

from .holder import BrainHolder

log = logging.getLogger(__name__)
#: how long stopping waits for the warm-up to end: it notices ``close`` at once unless it is
#: opening the store (a Redis that does not answer holds it to its timeout)
STOP_WAIT = 1.0


def start(holder: BrainHolder) -> threading.Thread:
    thread = threading.Thread(target=warm, args=(holder,), name="ic-warm", daemon=True)
    thread.start()
    return thread


def stop(thread: threading.Thread) -> None:
    """After ``BrainHolder.close``: wait (``STOP_WAIT`` at most) for the thread to end. A daemon
    thread still in pydantic-core when the interpreter finalizes made the process print a Rust
    panic on its way out (pyo3: "The Python interpreter is not initialized")."""
    thread.join(STOP_WAIT)


def warm(holder: BrainHolder) -> None:
    """Open the brain and its working memory (reads only: the id file comes with the first write)."""
    try:
        holder.get().memory().budget_status().model_dump(mode="json")
    except Exception as exc:
        if holder.closing:  # the server stopped (its client left) and closed the store under it
            log.info("the warm-up was left unfinished: the server stopped")
        elif isinstance(exc, InfiniteContextError):  # a bad setting, an unusable store: the
            log.warning("could not open the brain in the background: %s", exc)  # first call says so
        else:
            log.warning("warming the brain in the background failed", exc_info=True)
