"""The MCP stdio server: each tool parses its arguments and makes one ProjectBrain call.

The brain (settings, the store, the working-memory code) opens in a background thread started
before the SDK loads (``warm``), done before ``initialize`` is answered, so a tool call finds the
brain open (one that comes earlier waits for it in a worker thread).
Core errors become tool errors (``is_error``) in ``_call``, the one place they are mapped (anything
else as a short "internal error", its traceback only in the log). Messages the SDK cannot parse or
that carry what no tool takes (lone surrogates, deep nesting, Infinity, 64-bit overflow) are
answered with a JSON-RPC error by ``guard.relay`` before the SDK sees them.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from mcp.types import CallToolResult, TextContent
from pydantic import BaseModel, ValidationError

from infinite_context_brain.core.errors import InfiniteContextError
from infinite_context_brain.core.params import (
    HISTORY_LIMIT_DEFAULT,
    CharOffset,
    ContextText,
    FromVersion,
    HistoryLimit,
    MaxTokens,
    Steps,
    TokenCount,
    ToolUseId,
    ToVersion,
    Version,
    invalid_input,
    model_rule,
)

from .. import package_version, text
from ..claude_code import hook_calls
from ..claude_code.hook_tool import HOOK_TOOL
from .hints import DESTRUCTIVE, READ_ONLY
from .holder import BrainHolder
from .memory_tools import register as register_memory_tools

log = logging.getLogger(__name__)
T = TypeVar("T")

if TYPE_CHECKING:  # the brain (settings, store, mergers) loads on the first call, not at start
    from infinite_context_brain.core.brain import ProjectBrain
    from infinite_context_brain.core.memory.working import WorkingMemory
SERVER_NAME = "infinite-context"
#: the function the SDK's server constructor configures logging with (``_sdk_logging_only_if_unset``)
_SDK_LOGGING_STEP = "configure_logging"


def _instructions() -> str:
    return resources.files(__package__).joinpath("instructions.md").read_text(encoding="utf-8")


class Server(MCPServer):
    """MCPServer whose argument errors read like the core's: ``limit: must be <= 1000 (got 5000)
    Fix: pass an integer from 1 to 1000, e.g. 10``, from the same rules (core.params) the tool
    signatures declare, instead of pydantic's raw report."""

    #: set by ``build_server``: the holder that Claude Code's ``mcp_tool`` hooks work on
    holder: BrainHolder | None = None
    #: the client's name from its ``initialize``, as the stdio transport saw it go by: a call
    #: answered by ``fast_calls`` has no SDK session to read it from
    connected_client: str | None = None

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        if name == HOOK_TOOL and self.holder is not None:  # unlisted: only hooks call it
            return hook_calls.call(self.holder, arguments)
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            cause, tool = exc.__cause__, self._tool_manager.get_tool(name)
            if not isinstance(cause, ValidationError) or tool is None:
                raise
            rules = partial(model_rule, tool.fn_metadata.arg_model)
            raise ToolError(str(invalid_input(cause, rules))) from cause

    async def run_stdio_async(self) -> None:
        """Requests the SDK cannot parse, or that carry what no tool takes, get an error reply
        (``guard.screen``). Over pipes the event loop reads and writes the wire itself
        (``stdio.pipe_streams``) and the session reads and writes it in place
        (``session_streams``); otherwise the SDK's threaded transport with ``guard.relay``."""
        from contextlib import AsyncExitStack

        from mcp.server.stdio import stdio_server

        from . import fast_calls
        from .guard import relay, streams
        from .memory_tools import BOUNDED
        from .session_streams import session_streams
        from .stdio import fast_fds, pipe_streams

        _drop_idle_tracing(self._lowlevel_server)
        options = self._lowlevel_server.create_initialization_options()
        async with AsyncExitStack() as stack:
            if fast_fds():
                holder = self.holder
                settle = holder.settle if holder else None  # deferred index writes
                lines, out = await stack.enter_async_context(pipe_streams(settle))
                fast = None
                if holder is not None and fast_calls.enabled(self._lowlevel_server):
                    fast = fast_calls.FastCalls(self, BOUNDED, lambda: holder.ready)
                read, write = session_streams(lines, out, fast)
                await self._lowlevel_server.run(read, write, options)
                if fast is not None:
                    log.debug("input ended: %d tool calls answered by the transport", fast.answered)
                return
            read_stream, write_stream = await stack.enter_async_context(stdio_server())
            sink, checked = streams()
            async with anyio.create_task_group() as tg:
                tg.start_soon(relay, read_stream, sink, write_stream)
                await self._lowlevel_server.run(checked, write_stream, options)
                tg.cancel_scope.cancel()


@contextmanager
def _sdk_logging_only_if_unset() -> Iterator[None]:
    """The SDK's server constructor configures logging: it imports rich, builds a rich handler
    and hands it to ``logging.basicConfig``, which drops it when the root logger has a handler
    already. Ours always has one by then (JSON lines on stderr, set up by the entry point), so
    importing rich for nothing was ~10-15 ms of every start (issue 19). The SDK's function still
    runs, unchanged, when no handler is set (a server built without our entry point)."""
    from mcp.server.mcpserver import server as sdk

    configure = getattr(sdk, _SDK_LOGGING_STEP, None)
    if configure is None:  # an SDK without that step: nothing to spare
        yield
        return

    def configure_if_unset(*args: Any, **kwargs: Any) -> None:
        if not logging.getLogger().handlers:
            configure(*args, **kwargs)

    setattr(sdk, _SDK_LOGGING_STEP, configure_if_unset)
    try:
        yield
    finally:
        setattr(sdk, _SDK_LOGGING_STEP, configure)


def _drop_idle_tracing(server: Any) -> None:
    """The SDK wraps every request in an OpenTelemetry span, a no-op until a tracer provider is
    installed (~10 µs a call of span and context work, issue 19). With none installed when
    serving starts (``opentelemetry-instrument`` or the application installs one before), the
    middleware goes: nothing would have received its spans."""
    from mcp.server._otel import OpenTelemetryMiddleware
    from opentelemetry import trace

    if isinstance(trace.get_tracer_provider(), (trace.ProxyTracerProvider, trace.NoOpTracerProvider)):
        server.middleware = [m for m in server.middleware if not isinstance(m, OpenTelemetryMiddleware)]


def _reply(summary: str, model: BaseModel | list[BaseModel]) -> CallToolResult:
    if isinstance(model, list):
        structured: dict[str, object] = {"items": [m.model_dump(mode="json") for m in model]}
    else:
        structured = model.model_dump(mode="json")
    return CallToolResult(content=[TextContent(type="text", text=summary)], structured_content=structured)


def build_server(holder: BrainHolder) -> Server:
    """The server, its tools calling the brain that ``holder`` opens (the warm-up may be opening
    it already)."""
    with _sdk_logging_only_if_unset():
        app = Server(SERVER_NAME, version=package_version(), instructions=_instructions())
    app.holder = holder

    def _call(fn: Callable[[ProjectBrain], T]) -> T:
        try:
            return fn(holder.get())
        except InfiniteContextError as exc:
            raise ToolError(str(exc)) from None
        except Exception as exc:  # a bug: the log has the traceback, the model a short message
            log.exception("tool call failed")
            raise ToolError(
                f"internal error ({type(exc).__name__}). Fix: see the MCP server's log (stderr) and "
                "report it; other tools still work"
            ) from None

    async def _run(fn: Callable[[ProjectBrain], T], inline: bool = True) -> T:
        """``_call`` on the event loop when the brain is open and the tool's work is bounded (a
        worker thread costs ~0.1 ms a call); in a worker thread while the brain is still opening
        (the loop keeps reading) and for tools that may take long (a merge, a compaction, files)."""
        if inline and holder.ready:
            return _call(fn)
        return await anyio.to_thread.run_sync(_call, fn)

    async def _memory(fn: Callable[[WorkingMemory], T], client: str | None = None, inline: bool = True) -> T:
        client = client if client is not None else app.connected_client
        return await _run(lambda b: fn(b.memory(client)), inline)

    register_memory_tools(app, _memory)

    @app.tool(
        description="Merge what happened into the project brain (a new version; stored at once). "
        "Write short labelled lines: Current task:, In progress:, Done:, Next steps:, Blockers:, "
        "Decided:, Question:, Files:."
    )
    async def checkpoint(
        context: ContextText,
        token_count: TokenCount | None = None,
    ) -> CallToolResult:
        # in a worker thread: the merge may call an LLM
        result = await _run(lambda b: b.checkpoint(context, token_count), inline=False)
        return _reply(text.checkpoint_text(result), result)

    @app.tool(
        description="Load the project brain as Markdown. Call at session start and after /clear.",
        annotations=READ_ONLY,
    )
    async def resume(
        max_tokens: MaxTokens | None = None,
    ) -> CallToolResult:
        result = await _run(lambda b: b.resume(max_tokens))
        warnings = "".join(f"\n\nWarning: {w}" for w in result.warnings)
        # Claude Code shows the model the structured content when there is one: keep it the
        # same answer as the text (within max_tokens), not the whole state beside it.
        return CallToolResult(
            content=[TextContent(type="text", text=result.markdown + warnings)],
            structured_content={
                "markdown": result.markdown,
                "version": result.state.meta.version if result.state is not None else None,
                "tokens": result.tokens,
                "warnings": result.warnings,
            },
        )

    @app.tool(description="Version, size, merger and history of the project brain.", annotations=READ_ONLY)
    async def status() -> CallToolResult:
        result = await _run(lambda b: b.status())
        return _reply(text.status_text(result), result)

    @app.tool(
        description="Restore an earlier version (written as a new version; history is kept).",
        annotations=DESTRUCTIVE,
    )
    async def rollback(
        steps: Steps | None = None,
        version: Version | None = None,
    ) -> CallToolResult:
        result = await _run(lambda b: b.rollback(steps=steps, version=version))
        return _reply(text.rollback_text(result), result)

    @app.tool(description="List the versions kept in history, newest first.", annotations=READ_ONLY)
    async def history(
        limit: HistoryLimit = HISTORY_LIMIT_DEFAULT,
    ) -> CallToolResult:
        result = await _run(lambda b: b.history(limit))
        return _reply(text.history_text(result), result)  # type: ignore[arg-type]

    @app.tool(
        description="What changed between two versions (field by field and as a unified diff).",
        annotations=READ_ONLY,
    )
    async def diff(
        from_version: FromVersion,
        to_version: ToVersion,
    ) -> CallToolResult:
        result = await _run(lambda b: b.diff(from_version, to_version))
        return _reply(text.diff_text(result), result)

    @app.tool(
        description="The original output of a tool use that endless mode replaced by an observation "
        "(paged: pass next_offset for more).",
        annotations=READ_ONLY,
    )
    def expand(
        tool_use_id: ToolUseId,
        offset: CharOffset = 0,
    ) -> CallToolResult:
        from infinite_context_brain.core.transcript.service import expand as expand_output

        result = _call(lambda b: expand_output(tool_use_id, None, _transcript_root(b), offset))
        more = (
            f"\n\n[characters {result.offset:,}-{result.next_offset:,} of {result.total_chars:,}; "
            f"call expand with offset={result.next_offset} for more]"
            if result.next_offset is not None
            else ""
        )
        return _reply(result.text + more, result)

    @app.tool(
        description="How full this Claude Code session's context window is, by category.",
        annotations=READ_ONLY,
    )
    def context_meter() -> CallToolResult:
        from infinite_context_brain.core.transcript.service import context_meter as measure

        result = _call(lambda b: measure(None, _transcript_root(b), b.settings))
        return CallToolResult(
            content=[TextContent(type="text", text=text.meter_text(result))],
            structured_content={
                "context_tokens": result.context_tokens,
                "context_window": result.context_window,
                "percent": result.percent,
                "model": result.model,
                "compactions": len(result.compactions),
                "by_category": result.by_category,
                "transcript": result.transcript,
            },
        )

    @app.prompt(name="checkpoint", description="Save this session's progress into the project brain.")
    def checkpoint_prompt(note: str = "") -> str:
        extra = f"\nAlso record: {note}" if note else ""
        return (
            "Call the infinite-context `checkpoint` tool now. In `context`, write short labelled lines "
            "covering this session since the last checkpoint: `Done:` (what is finished), `Current task:` "
            "(what is in progress or next), `Decided:` (decisions and why), `Question:` (open questions), "
            f"`Files:` (paths you edited or must read next).{extra}"
        )

    @app.prompt(name="resume", description="Reload the project brain into this conversation.")
    def resume_prompt() -> str:
        try:
            markdown = holder.get().resume().markdown
        except InfiniteContextError as exc:
            markdown = f"(the project brain could not be read: {exc})"
        return (
            "Here is the saved context of this project. Read it, then continue with the current task; "
            "ask if anything is unclear.\n\n" + markdown
        )

    @app.resource(
        "infinite-context://state",
        name="state",
        mime_type="application/json",
        description="The project brain as JSON (null before the first checkpoint).",
    )
    def state_resource() -> str:
        try:
            state = holder.get().resume().state
        except InfiniteContextError as exc:
            raise ResourceError(str(exc)) from None
        return state.model_dump_json(indent=2) if state is not None else "null"

    return app


def _transcript_root(brain: ProjectBrain) -> Path:
    """Claude Code keys transcripts on the folder it started in: the folder ``locate_project``
    chose for this brain (``CLAUDE_PROJECT_DIR`` or this server's cwd unless overridden)."""
    return brain.project.folder or brain.project.root
