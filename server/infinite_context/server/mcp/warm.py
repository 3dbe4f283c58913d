"""Open the brain in the background as the server starts serving (issue 19).

Opening the brain on the first tool call (core imports, settings, the store, the working-memory
code) made that call wait ~70 ms. ``start`` runs it in a daemon thread begun once the MCP SDK has
loaded, just before the server reads its first message: ``initialize`` is answered as fast as
before (within 1.15x a bare server), and the brain is open ~50 ms later, long before a real
client's first tool call (Claude Code sends one after a model reply). Started before the SDK
import instead, it shares the GIL with that import and delays ``initialize`` by as much. Warming
only reads: a project's id file is written on the first write, as before. A failure is logged
and ignored: the first call then opens the brain itself and reports any error.
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .holder import BrainHolder

log = logging.getLogger(__name__)


def start(holder: BrainHolder) -> threading.Thread:
    thread = threading.Thread(target=warm, args=(holder,), name="ic-warm", daemon=True)
    thread.start()
    return thread


def warm(holder: BrainHolder) -> None:
    from infinite_context.core.errors import InfiniteContextError

    try:
        from infinite_context.core.clock import utcnow
        from infinite_context.core.memory import working  # noqa: F401  (the first memory call's code)
        from infinite_context.core.memory.model import MemoryItem, QueryHit
        from infinite_context.core.memory.ranking import top_by_retention

        brain = holder.get()
        # Reads only: ``brain.memory()`` would create the project's id file, which only the
        # first write may do; a project without one has nothing to search yet.
        session = brain.session_id
        brain.budget()
        if session:
            top_by_retention(brain.store, session, 1, utcnow())
            brain.store.memory_search(session, ["warm"], 1, False)
        sample = MemoryItem(content="warm")
        sample.model_dump(mode="json", exclude={"content"})
        QueryHit.model_construct(item=sample, score=0.0, relevance=0.0, retention=0.0)
    except InfiniteContextError as exc:  # a bad setting, an unusable store: the first call says so
        log.warning("could not open the brain in the background: %s", exc)
    except Exception:
        log.warning("warming the brain in the background failed", exc_info=True)
