"""The MCP stdio server: the SDK's ``MCPServer``, its tools module-level functions
(``brain_tools``, ``memory_tools``) that reach the brain through the lifespan context.

The brain opens in the background once serving starts (``warm``); a call that comes earlier waits
for it. Tool failures become tool errors (``isError``) in ``Server.call_tool``, the one place they
are mapped: arguments that break a rule are reported in the core's words (``limit: must be <= 1000
(got 5000) Fix: pass an integer from 1 to 1000, e.g. 10``, from the same rules the signatures
declare), a core error with its message and fix, anything else as a short "internal error" (its
traceback only in the log). Claude Code's ``mcp_tool`` hooks call an unlisted tool, routed there
to ``claude_code.hook_calls``.
"""

from __future__ import annotations

import logging
import typing
from collections.abc import Callable
from importlib import resources
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from mcp.types import CallToolResult, Icon, InputRequiredResult, ToolAnnotations
from pydantic import ValidationError

from infinite_context_brain.core.errors import InfiniteContextError
from infinite_context_brain.core.params import invalid_input

from .. import package_version
from ..claude_code import hook_calls
from ..claude_code.hook_tool import HOOK_TOOL
from . import brain_tools, memory_tools
from .holder import BrainHolder
from .lifespan import lifespan_for

log = logging.getLogger(__name__)
SERVER_NAME = "infinite-context"
STATE_URI = "infinite-context://state"


def _instructions() -> str:
    return resources.files(__package__).joinpath("instructions.md").read_text(encoding="utf-8")


class Server(MCPServer[BrainHolder]):
    """MCPServer that keeps each tool's function, to word argument errors from its signature, and
    maps every tool failure in ``call_tool``."""

    def __init__(self, holder: BrainHolder) -> None:
        super().__init__(
            SERVER_NAME,
            version=package_version(),
            instructions=_instructions(),
            lifespan=lifespan_for(holder),
        )
        self._functions: dict[str, Callable[..., Any]] = {}

    def add_tool(
        self,
        fn: Callable[..., Any],
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        annotations: ToolAnnotations | None = None,
        icons: list[Icon] | None = None,
        meta: dict[str, Any] | None = None,
        structured_output: bool | None = None,
    ) -> None:
        super().add_tool(fn, name, title, description, annotations, icons, meta, structured_output)
        self._functions[name or fn.__name__] = fn

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[BrainHolder, Any] | None = None
    ) -> CallToolResult | InputRequiredResult:
        if name == HOOK_TOOL and context is not None:  # unlisted: only Claude Code's hooks call it
            return hook_calls.call(context.request_context.lifespan_context, arguments)
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            raise self._worded(name, exc) from exc.__cause__

    def _worded(self, name: str, exc: ToolError) -> ToolError:
        """The tool error the client reads (``exc`` is the SDK's, its cause what was raised)."""
        cause, fn = exc.__cause__, self._functions.get(name)
        if isinstance(cause, ValidationError) and fn is not None:
            rules = typing.get_type_hints(fn, include_extras=True)
            return ToolError(str(invalid_input(cause, rules.__getitem__)))
        if isinstance(cause, InfiniteContextError):
            return ToolError(f"{exc}: {cause}")
        if cause is None or isinstance(cause, (ToolError, ResourceError)):
            return exc  # an unknown tool, or a failure the SDK words already
        log.error("tool %s failed", name, exc_info=cause)  # a bug: the log has the traceback
        return ToolError(
            f"{exc}: internal error ({type(cause).__name__}). Fix: see the MCP server's log (stderr) "
            "and report it; other tools still work"
        )


def state_resource(holder: BrainHolder) -> str:
    """The project brain as JSON (null before the first checkpoint)."""
    try:
        state = holder.get().resume().state
    except InfiniteContextError as exc:
        raise ResourceError(str(exc)) from None
    return state.model_dump_json(indent=2) if state is not None else "null"


def build_server(holder: BrainHolder) -> Server:
    """The server, its tools calling the brain that ``holder`` opens once serving starts."""
    app = Server(holder)
    memory_tools.register(app)
    brain_tools.register(app)
    app.resource(
        STATE_URI,
        name="state",
        mime_type="application/json",
        description="The project brain as JSON (null before the first checkpoint).",
    )(lambda: state_resource(holder))  # a static resource takes no Context: the holder directly
    return app
