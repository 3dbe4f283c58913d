"""Open the brain in the background while the server starts (issue 19).

Opening the brain on the first tool call (core imports, settings, the store, the working-memory
code) made that call wait ~70 ms. ``start`` runs it in a daemon thread begun before the MCP SDK
loads, in the order a first *memory* call needs it: the imports of the code it runs (the brain
with settings and the store's parts, working memory, the SQLite store; the merge code, rendering
and the redaction rules load on first use), settings, the store and the advisory lock, working
memory's read path and the models its replies dump. That is ~35 ms of CPU beside the SDK's
~500 ms import, so it is done long before ``initialize`` is answered and the first call finds the
brain open; waiting on the store (a slow or unreachable Redis) waits in this thread, never in
``initialize``. Then, once the server is built (``Warmup.server_built``) and ``WRITE_PATH_DELAY``
later, what a first write or ``status`` needs (the redaction rules, the new-item model, the budget
report).

Why this fits in the cold-start budget (``initialize`` <= 1.15x a bare one-tool server): the
thread shares the GIL, so every ms it runs before the reply delays the reply; started after the
SDK import it overlapped only the end of start-up and the first call waited 30-170 ms for it,
and run beside the import it made ``initialize`` 1.16-1.29x. Start-up now runs without the cyclic
garbage collector (``startup_gc``: ~15% of the SDK import's CPU), which pays for the warm-up and
more; collection resumes once the server is built and the read path is warm.

A tool call that comes while it runs waits for it rather than doing the work twice:
``BrainHolder.get`` holds its lock while the brain opens, and a module this thread is importing
is waited for by any other thread importing it. Warming only reads: a project's id file is
written on the first write. A failure is logged and ignored: the first call then opens the brain
itself and reports the error (a bad setting, an unreachable store).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .holder import BrainHolder
    from .startup_gc import StartupGc

log = logging.getLogger(__name__)
#: seconds between the server being built and warming the write path (see ``warm``)
WRITE_PATH_DELAY = 0.2
#: how long stopping waits for the warm-up to end (``Warmup.stop``): it notices ``close`` at once
#: unless it is opening the store (a Redis that does not answer holds it to its timeout)
STOP_WAIT = 1.0


class Warmup:
    """The warm-up thread, told by start-up when the server is built."""

    def __init__(self, holder: BrainHolder, gc_pause: StartupGc) -> None:
        self._built = threading.Event()
        self._gc_pause = gc_pause
        self.thread = threading.Thread(
            target=warm, args=(holder, self._built, gc_pause.done), name="ic-warm", daemon=True
        )

    def server_built(self) -> None:
        """The SDK is loaded and the tools registered: collection may resume (once the read path
        is warm too), and the write path warms ``WRITE_PATH_DELAY`` from now."""
        self._built.set()
        self._gc_pause.done()

    def stop(self) -> None:
        """After ``BrainHolder.close``: wait (``STOP_WAIT`` at most) for the thread to end. A
        daemon thread still in pydantic-core when the interpreter finalizes made the process
        print a Rust panic on its way out (pyo3: "The Python interpreter is not initialized"),
        seen when a client left while the warm-up ran."""
        self._built.set()  # (a server that failed to build never set it)
        self.thread.join(STOP_WAIT)


def start(holder: BrainHolder) -> Warmup:
    """Pause collection and start warming, before the SDK import; call ``server_built`` after."""
    from .startup_gc import StartupGc

    warmup = Warmup(holder, StartupGc(parties=2))  # the server built, the read path warm
    warmup.thread.start()
    return warmup


def warm(
    holder: BrainHolder,
    built: threading.Event | None = None,
    read_path_done: Callable[[], None] | None = None,
) -> None:
    """The warm-up, to the end: the read path, then (after ``built``, if given) the write path.
    ``read_path_done`` is called once the read path is warm or failed."""
    from infinite_context_brain.core.errors import InfiniteContextError

    try:
        try:
            _preload()
            _warm(holder)
        finally:
            if read_path_done is not None:
                read_path_done()
        if built is not None:
            built.wait()
        # Not at once: run beside a call sent right after `initialize`, this CPU work took the GIL
        # from it at every store round trip (+8 ms on SQLite, +10 ms on Redis, side by side);
        # a client's first real call comes after a model reply, seconds later.
        if not holder.wait_closing(WRITE_PATH_DELAY):  # (``get`` would open the brain again)
            _warm_writes(holder)
    except Exception as exc:
        if holder.closing:  # the server stopped (its client left) and closed the store under it
            log.info("the warm-up was left unfinished: the server stopped")
        elif isinstance(exc, InfiniteContextError):  # a bad setting, an unusable store: the
            log.warning("could not open the brain in the background: %s", exc)  # first call says so
        else:
            log.warning("warming the brain in the background failed", exc_info=True)


def _preload() -> None:
    """The code a first memory call runs, imports only (~25 ms): the brain with settings and the
    store's parts, working memory, the SQLite store (the default)."""
    from infinite_context_brain.core import brain  # noqa: F401
    from infinite_context_brain.core.memory import working  # noqa: F401
    from infinite_context_brain.core.storage import sqlite  # noqa: F401


def _warm(holder: BrainHolder) -> None:
    brain = holder.get()  # settings, the store, the brain (under the holder's lock)
    # What `recall` / `query` run, reads only (``memory()`` writes nothing: the id file is made
    # by the first write); a project without an id has nothing to search yet.
    from infinite_context_brain.core.clock import utcnow
    from infinite_context_brain.core.memory.model import MemoryItem, QueryHit
    from infinite_context_brain.core.memory.ranking import top_by_retention

    memory = brain.memory()
    status = memory.budget_status()
    session = brain.session_id
    if session:
        top_by_retention(brain.store.memory, session, 1, utcnow())
        brain.store.memory.memory_search(session, ["warm"], 1, False)
    # the replies' serialisers (the models are built on first use)
    status.model_dump(mode="json")
    sample = MemoryItem(content="warm")
    sample.model_dump(mode="json", exclude={"content"})
    QueryHit.model_construct(item=sample, score=0.0, relevance=0.0, retention=0.0)


def _warm_writes(holder: BrainHolder) -> None:
    """What a first write or ``status`` needs: the redaction rules (~8 ms to compile), the new-item
    model, the budget report."""
    from infinite_context_brain.core import redact  # noqa: F401
    from infinite_context_brain.core.memory.model import NewItem

    NewItem.model_rebuild()
    holder.get().budget()
