"""The peer of the MCP benchmarks: a stock mcp 2.x server with no-op tools, written the way the
SDK's documentation writes tools. ``noop`` is a plain function (the SDK runs it in a worker thread,
as it runs ours), ``noop_async`` a coroutine (no thread)."""

from mcp.server.mcpserver import MCPServer

app = MCPServer("bare")


@app.tool()
def noop() -> str:
    return "ok"


@app.tool()
async def noop_async() -> str:
    return "ok"


if __name__ == "__main__":
    app.run("stdio")
