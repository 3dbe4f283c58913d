"""Warm the brain in the background right after the MCP handshake (issue 19).

``initialize`` still answers as fast as a bare server (nothing is opened before it); as soon as
the client confirms with ``notifications/initialized``, a daemon thread opens the brain and the
store, imports the working-memory code and runs one read of each kind a tool makes, so the
first tool call finds everything loaded instead of paying ~70 ms for it. Warming only reads: a
project's id file is written on the first write, as before. A failure is logged and ignored:
the first call then opens the brain itself and reports any error.
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING, Any

from mcp import types

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

    from .app import BrainHolder

log = logging.getLogger(__name__)


def install(app: MCPServer, holder: BrainHolder) -> None:
    async def on_initialized(_ctx: Any, _params: Any) -> None:
        threading.Thread(target=warm, args=(holder,), name="ic-warm", daemon=True).start()

    app._lowlevel_server.add_notification_handler(
        "notifications/initialized", types.NotificationParams, on_initialized
    )


def warm(holder: BrainHolder) -> None:
    try:
        from infinite_context.core.clock import utcnow
        from infinite_context.core.memory.model import MemoryItem, QueryHit
        from infinite_context.core.memory.ranking import top_by_retention

        from .memory_tools import lean

        memory = holder.get().memory()
        memory.budget_status()
        top_by_retention(memory.store, memory.session_id, 1, utcnow())
        memory.store.memory_search(memory.session_id, ["warm"], 1, False)
        sample = MemoryItem(content="warm")
        lean(sample)
        QueryHit.model_construct(item=sample, score=0.0, relevance=0.0, retention=0.0)
    except Exception:
        log.warning("warming the brain in the background failed", exc_info=True)
