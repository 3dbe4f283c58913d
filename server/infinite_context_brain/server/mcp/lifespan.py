"""The server's lifespan, and what a tool reaches through its ``Context``: the one brain holder
(the brain opened in the background once serving starts, closed when serving stops) and the
name the client gave in ``initialize`` (working memory's budget follows it)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import TYPE_CHECKING, Any

from mcp.server.mcpserver import Context, MCPServer

from . import warm
from .holder import BrainHolder

if TYPE_CHECKING:  # loaded by the warm-up thread, not on the way to `initialize`
    from infinite_context_brain.core.brain import ProjectBrain
    from infinite_context_brain.core.memory.working import WorkingMemory

#: what every tool function takes first
Ctx = Context[BrainHolder, Any]


def lifespan_for(
    holder: BrainHolder,
) -> Callable[[MCPServer[BrainHolder]], AbstractAsyncContextManager[BrainHolder]]:
    @asynccontextmanager
    async def lifespan(_app: MCPServer[BrainHolder]) -> AsyncIterator[BrainHolder]:
        warming = warm.start(holder)
        try:
            yield holder
        finally:
            holder.close()
            warm.stop(warming)

    return lifespan


def holder_of(ctx: Ctx) -> BrainHolder:
    return ctx.request_context.lifespan_context


def brain(ctx: Ctx) -> ProjectBrain:
    """The project's brain (waits for the warm-up if it is still opening it)."""
    return holder_of(ctx).get()


def memory(ctx: Ctx) -> WorkingMemory:
    """Working memory, its budget detected from the client's name."""
    return brain(ctx).memory(client_name(ctx))


def client_name(ctx: Ctx) -> str | None:
    params = ctx.session.client_params
    return params.client_info.name if params is not None else None
