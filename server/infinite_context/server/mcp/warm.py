"""Open the brain in the background while the server starts (issue 19).

Opening the brain on the first tool call (core imports, settings, the store, the working-memory
code) made that call wait ~70 ms. A daemon thread does it instead, in two steps:

1. from process start, beside the SDK import: the imports of the code a first memory call runs
   (``_preload``: the brain with settings and the store's parts, working memory, the SQLite store;
   ~25 ms, no merge, rendering or redaction code, which load on first use);
2. once the SDK has loaded (``cli.cmd_mcp`` sets the event ``start`` returns): settings, the
   store, the advisory lock and working memory's read path, then what a first write or
   ``status`` needs (the redaction rules, the new-item model, the budget report).

The split is a trade between ``initialize`` (Claude Code waits for it on every session start)
and a tool call sent right after it. The thread shares the GIL with the main thread: whatever it
runs before ``initialize`` is answered delays that answer by as much, whatever is left after
delays the call. Everything beside the SDK import made ``initialize`` 1.25x a bare server;
everything after it made that call wait 57 ms (SQLite) / 142 ms (Redis, whose client library
loads then). Step 1 costs ``initialize`` about what the old warm-up's overlap with start-up did,
and step 2 on SQLite is done by the time a client can send a call.

A tool call that comes while it runs waits for it rather than doing the work twice:
``BrainHolder.get`` holds its lock while the brain opens, and a module this thread is importing
is waited for by any other thread importing it. Warming only reads: a project's id file is
written on the first write. A failure is logged and ignored: the first call then opens the brain
itself and reports the error (a bad setting, an unreachable store).
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .holder import BrainHolder

log = logging.getLogger(__name__)


def start(holder: BrainHolder) -> threading.Event:
    """Start warming ``holder``'s brain; set the returned event once the SDK has loaded: the
    imports run before (beside the SDK import), opening the store and the rest after."""
    loaded = threading.Event()
    thread = threading.Thread(target=warm, args=(holder, loaded), name="ic-warm", daemon=True)
    thread.start()
    return loaded


def warm(holder: BrainHolder, loaded: threading.Event | None = None) -> None:
    from infinite_context.core.errors import InfiniteContextError

    try:
        _preload()
        if loaded is not None:
            loaded.wait()
        _warm(holder)
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
    # What a first write needs: the redaction rules (~8 ms to compile) and the new-item model.
    from infinite_context.core import redact  # noqa: F401
    from infinite_context.core.memory.model import NewItem

    NewItem.model_rebuild()
    brain.budget()
