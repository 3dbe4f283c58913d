"""The peer for the cold-start benchmark: the smallest useful mcp 2.x server (one tool)."""

from mcp.server.mcpserver import MCPServer

app = MCPServer("bare")


@app.tool()
def ping() -> str:
    return "pong"


if __name__ == "__main__":
    app.run("stdio")
