"""Serving the MCP server over stdio: the SDK's stdio transport (``stdio_server``), the guard
between its read stream and the server (``guard.relay``), and the SDK's low-level ``Server``
answering each request with the ``MCPServer``'s public methods, as ``MCPServer`` itself does.

Why not ``MCPServer.run("stdio")``: the guard needs the transport's streams, and ``MCPServer``
offers no public way to be run over given streams. The day the SDK answers unreadable lines itself
(``tests/server/test_protocol_faults.py`` pins that it does not), this module and ``guard`` go and the
command calls ``app.run("stdio")``.
"""

from __future__ import annotations

import base64
import logging

import anyio
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage
from mcp.types import (
    INTERNAL_ERROR,
    BlobResourceContents,
    CallToolRequestParams,
    CallToolResult,
    GetPromptRequestParams,
    GetPromptResult,
    InputRequiredResult,
    ListPromptsResult,
    ListResourcesResult,
    ListResourceTemplatesResult,
    ListToolsResult,
    PaginatedRequestParams,
    ReadResourceRequestParams,
    ReadResourceResult,
    TextContent,
    TextResourceContents,
)

from .guard import relay
from .holder import BrainHolder

log = logging.getLogger(__name__)
App = MCPServer[BrainHolder]
Request = ServerRequestContext[BrainHolder]


def low_level(app: App) -> Server[BrainHolder]:
    """A low-level server answering with ``app``'s tools, prompts and resources, in its lifespan."""

    def context(
        ctx: Request, params: CallToolRequestParams | GetPromptRequestParams | None = None
    ) -> Context[BrainHolder, object]:
        return Context(request_context=ctx, mcp_server=app, input_params=params)

    async def list_tools(ctx: Request, params: PaginatedRequestParams | None) -> ListToolsResult:
        return ListToolsResult(tools=await app.list_tools())

    async def call_tool(ctx: Request, params: CallToolRequestParams) -> CallToolResult | InputRequiredResult:
        try:
            return await app.call_tool(params.name, params.arguments or {}, context(ctx, params))
        except MCPError:
            raise
        except Exception as exc:  # a tool error the model reads (``app.Server`` words it)
            log.info("tool %s failed: %s", params.name, exc)
            return CallToolResult(content=[TextContent(type="text", text=str(exc))], is_error=True)

    async def list_prompts(ctx: Request, params: PaginatedRequestParams | None) -> ListPromptsResult:
        return ListPromptsResult(prompts=await app.list_prompts())

    async def get_prompt(
        ctx: Request, params: GetPromptRequestParams
    ) -> GetPromptResult | InputRequiredResult:
        return await app.get_prompt(params.name, params.arguments, context(ctx, params))

    async def list_resources(ctx: Request, params: PaginatedRequestParams | None) -> ListResourcesResult:
        return ListResourcesResult(resources=await app.list_resources())

    async def list_templates(
        ctx: Request, params: PaginatedRequestParams | None
    ) -> ListResourceTemplatesResult:
        return ListResourceTemplatesResult(resource_templates=await app.list_resource_templates())

    async def read_resource(
        ctx: Request, params: ReadResourceRequestParams
    ) -> ReadResourceResult | InputRequiredResult:
        try:
            found = await app.read_resource(params.uri, context(ctx))
        except ResourceError as exc:
            raise MCPError(code=INTERNAL_ERROR, message=str(exc), data={"uri": str(params.uri)}) from None
        if isinstance(found, InputRequiredResult):
            return found
        contents: list[TextResourceContents | BlobResourceContents] = []
        for item in found:
            if isinstance(item.content, bytes):
                blob = base64.b64encode(item.content).decode()
                mime = item.mime_type or "application/octet-stream"
                contents.append(BlobResourceContents(uri=params.uri, blob=blob, mime_type=mime))
            else:
                mime = item.mime_type or "text/plain"
                contents.append(TextResourceContents(uri=params.uri, text=item.content, mime_type=mime))
        return ReadResourceResult(contents=contents)

    lifespan = app.settings.lifespan
    if lifespan is None:
        raise ValueError("the server needs its lifespan: the tools reach the brain through it")
    return Server(
        app.name,
        version=app.version,
        instructions=app.instructions,
        lifespan=lambda _server: lifespan(app),
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_prompts=list_prompts,
        on_get_prompt=get_prompt,
        on_list_resources=list_resources,
        on_list_resource_templates=list_templates,
        on_read_resource=read_resource,
    )


async def serve_stdio(app: App) -> None:
    """Serve ``app`` over stdin and stdout until the client closes stdin."""
    server = low_level(app)
    async with stdio_server() as (read, write):
        passage, checked = anyio.create_memory_object_stream[SessionMessage | Exception](0)
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(relay, read, passage, write)
            await server.run(checked, write, server.create_initialization_options())
            tasks.cancel_scope.cancel()
