"""Tool annotations (MCP ``ToolAnnotations``) shared by the brain and memory tools: clients such
as Claude Code may run read-only tools without asking and warn before destructive ones."""

from __future__ import annotations

from mcp.types import ToolAnnotations

#: resume, status, history, diff, expand, context_meter, query, recall, list, export
READ_ONLY = ToolAnnotations(
    readOnlyHint=True, destructiveHint=False, idempotentHint=True, openWorldHint=False
)
#: forget (deletes an item for good), rollback (replaces the current state)
DESTRUCTIVE = ToolAnnotations(readOnlyHint=False, destructiveHint=True, openWorldHint=False)
