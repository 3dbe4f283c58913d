"""Open the brain in the background as the server starts serving (issue 19).

Opening the brain on the first tool call (core imports, settings, the store, the working-memory
code) made that call wait ~70 ms. ``start`` runs it in a daemon thread begun once the MCP SDK has
loaded, in the order a first *memory* call needs it: the imports of the code it runs (the brain
with settings and the store's parts, working memory, the SQLite store: ~25 ms; the merge code,
rendering and the redaction rules load on first use), settings, the store and the advisory lock,
working memory's read path and the models its replies dump; then, 0.2 s later
(``WRITE_PATH_DELAY``), what a first write or ``status`` needs (the redaction rules, the new-item
model, the budget report).

Why after the SDK import: the thread shares the GIL with the main thread, so whatever it runs
before ``initialize`` is answered delays that answer (Claude Code waits for it on every session
start), and ``initialize`` wins over a tool call sent at once. All of the warm-up beside the SDK
import made ``initialize`` 1.25x a bare server; the imports alone still 1.21x against 1.13x
(measured side by side, issue 19). Started here it overlaps only the last of start-up.

A tool call that comes while it runs waits for it rather than doing the work twice:
``BrainHolder.get`` holds its lock while the brain opens, and a module this thread is importing
is waited for by any other thread importing it. Warming only reads: a project's id file is
written on the first write. A failure is logged and ignored: the first call then opens the brain
itself and reports the error (a bad setting, an unreachable store).
"""

from __future__ import annotations

import gc
import logging
import threading
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .holder import BrainHolder

log = logging.getLogger(__name__)
#: seconds between the read path being warm and warming the write path (see ``warm``)
WRITE_PATH_DELAY = 0.2


def start(holder: BrainHolder) -> threading.Thread:
    thread = threading.Thread(target=warm, args=(holder,), name="ic-warm", daemon=True)
    thread.start()
    return thread


def warm(holder: BrainHolder) -> None:
    from infinite_context.core.errors import InfiniteContextError

    try:
        _preload()
        _warm(holder)
        # Not at once: run beside a call sent right after `initialize`, this CPU work took the GIL
        # from it at every store round trip (+8 ms on SQLite, +10 ms on Redis, side by side);
        # a client's first real call comes after a model reply, seconds later.
        time.sleep(WRITE_PATH_DELAY)
        if not holder.closing:  # (``get`` would open the brain again)
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
    from infinite_context.core import brain  # noqa: F401
    from infinite_context.core.memory import working  # noqa: F401
    from infinite_context.core.storage import sqlite  # noqa: F401


def _warm(holder: BrainHolder) -> None:
    brain = holder.get()  # settings, the store, the brain (under the holder's lock)
    # What `recall` / `query` run, reads only (``memory()`` writes nothing: the id file is made
    # by the first write); a project without an id has nothing to search yet.
    from infinite_context.core.clock import utcnow
    from infinite_context.core.memory.model import MemoryItem, QueryHit
    from infinite_context.core.memory.ranking import top_by_retention

    memory = brain.memory()
    status = memory.budget_status()
    session = brain.session_id
    if session:
        top_by_retention(brain.store, session, 1, utcnow())
        brain.store.memory_search(session, ["warm"], 1, False)
    # the replies' serialisers (the models are built on first use)
    status.model_dump(mode="json")
    sample = MemoryItem(content="warm")
    sample.model_dump(mode="json", exclude={"content"})
    QueryHit.model_construct(item=sample, score=0.0, relevance=0.0, retention=0.0)


def _warm_writes(holder: BrainHolder) -> None:
    """What a first write or ``status`` needs: the redaction rules (~8 ms to compile), the new-item
    model, the budget report."""
    from infinite_context.core import redact  # noqa: F401
    from infinite_context.core.memory.model import NewItem

    NewItem.model_rebuild()
    holder.get().budget()
    # Everything start-up made (the SDK's and pydantic's ~100k objects) lives as long as the
    # server: out of the garbage collector's full passes, which walked all of it every few hundred
    # calls (60-120 ms each at 1k-10k items, 210 ms at most; 20-70 ms frozen, issue 19).
    gc.freeze()
