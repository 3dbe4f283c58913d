"""Claude Code hooks delivered to this server as ``mcp_tool`` calls (Claude Code 2.1.118+).

A command hook costs a process per tool call (~20 ms here, more on a loaded machine, plus a
worker that imports the core while Claude Code works); an ``mcp_tool`` hook is one JSON-RPC
round trip to this server, which is already running for the session with the brain warm
(issue 16). ``install claude-code`` wires PostToolUse and Stop this way when the Claude Code it
finds supports it; SessionStart (it runs before MCP servers connect), SessionEnd and PreCompact
stay command hooks.

The tool is not listed (the model never sees or calls it): Claude Code calls it by name.
Its arguments are the hook's input fields, interpolated by Claude Code from the ``input`` map
that ``hook_input`` writes (an object field arrives as its JSON text). The answer comes at
once; the work (store the observation, write the hand-off) runs after it on the brain holder's
background thread. Nothing is lost when this server is not connected or stops first: the
hand-off stores an observation for every tool use of the transcript that has none, and the
SessionEnd command hook writes the hand-off through the spool.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent

from infinite_context_brain.core.errors import InfiniteContextError

from .hook_tool import payload_of

if TYPE_CHECKING:
    from infinite_context_brain.core.brain import ProjectBrain

    from ..mcp.holder import BrainHolder

#: seconds between the Stop hook and its hand-off
STOP_DELAY_SECONDS = 1.0


def _run(event: str, payload: dict[str, Any], brain: ProjectBrain) -> None:
    if event == "PostToolUse":
        brain.observe(payload)
    else:
        from .hooks import hand_off

        hand_off(brain, payload, "stop")


def call(holder: BrainHolder, arguments: dict[str, Any]) -> CallToolResult:
    """Answer the hook at once (an empty hook output); the work follows in the background."""
    try:
        event, payload = payload_of(arguments)
    except InfiniteContextError as exc:
        raise ToolError(str(exc)) from None
    # The hand-off waits a moment: when the session is ending (a `-p` run right after its last
    # answer), it is not started at all (SessionEnd writes it), so Claude Code's exit never
    # waits for it or shares the CPU with it.
    delay = STOP_DELAY_SECONDS if event == "Stop" else 0.0
    holder.later(lambda brain: _run(event, payload, brain), f"hook {event}", delay)
    return CallToolResult(content=[TextContent(type="text", text="{}")])
