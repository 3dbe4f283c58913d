"""The peer for the cold-start benchmark: the smallest useful mcp 2.x server (one tool).

With ``--gc-paused`` it starts the way ours does since issue 19, without the garbage collector
until it is built (``server/mcp/startup_gc.py``): the cold-start table shows ours against both, so
our own overhead on top of the SDK stays visible."""

import gc
import sys

GC_PAUSED = "--gc-paused" in sys.argv
if GC_PAUSED:
    gc.disable()

from mcp.server.mcpserver import MCPServer  # noqa: E402

app = MCPServer("bare")


@app.tool()
def ping() -> str:
    return "pong"


if GC_PAUSED:
    gc.freeze()
    gc.enable()

if __name__ == "__main__":
    app.run("stdio")
