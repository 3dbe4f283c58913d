"""Our MCP server through the real MCP client over stdio, and the raw ``initialize`` message for
tests that speak to it without the client."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.types import Implementation

from ..conftest import PYTHON, cli_env

#: ``initialize`` as a client sends it, one JSON-RPC message
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "0"},
    },
}


@asynccontextmanager
async def mcp_session(
    project_dir: Path, store_url: str, client: Implementation | None = None, **env: str
) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(
        command=PYTHON,
        args=["-m", "infinite_context_brain.server", "mcp"],
        cwd=str(project_dir),
        env=cli_env(store_url, **env),
    )
    async with (
        stdio_client(params) as (read, write),
        ClientSession(read, write, client_info=client) as session,
    ):
        init = await session.initialize()
        assert init.server_info.name == "infinite-context"
        assert init.instructions and len(init.instructions.encode()) < 2048
        yield session


def text_of(result: Any) -> str:
    return "\n".join(block.text for block in result.content if getattr(block, "type", "") == "text")
