"""The project-brain MCP tools and prompts: one module-level function each, its arguments typed by
the rules in ``core.params``, making one ProjectBrain call. The SDK runs each (plain functions) in
a worker thread, so a merge or a slow store never holds the event loop; errors are mapped in one
place, ``app.Server.call_tool``."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult, TextContent

from infinite_context_brain.core.errors import InfiniteContextError
from infinite_context_brain.core.facts import Stated, StatedBlocker, StatedDecision
from infinite_context_brain.core.params import (
    HISTORY_LIMIT_DEFAULT,
    CharOffset,
    CheckpointTask,
    ContextText,
    DoneList,
    FileList,
    FromVersion,
    GotchaList,
    HistoryLimit,
    InProgress,
    MaxTokens,
    NextSteps,
    NoteList,
    Steps,
    TokenCount,
    ToolUseId,
    ToVersion,
    Version,
)

from .. import text
from .hints import DESTRUCTIVE, READ_ONLY
from .lifespan import Ctx, brain
from .replies import reply

if TYPE_CHECKING:
    from infinite_context_brain.core.brain import ProjectBrain


def checkpoint(
    ctx: Ctx,
    context: ContextText | None = None,
    task: CheckpointTask | None = None,
    in_progress: InProgress | None = None,
    next_steps: NextSteps | None = None,
    done: DoneList | None = None,
    decisions: list[StatedDecision] | None = None,
    blockers: list[StatedBlocker] | None = None,
    files: FileList | None = None,
    notes: NoteList | None = None,
    gotchas: GotchaList | None = None,
    token_count: TokenCount | None = None,
) -> CallToolResult:
    stated = Stated(
        task=task or "",
        in_progress=in_progress or "",
        next_steps=next_steps,
        done=done or [],
        decisions=decisions or [],
        blockers=blockers,
        files=files or [],
        notes=notes or [],
        gotchas=gotchas or [],
    )
    result = brain(ctx).checkpoint(context, token_count, stated=stated, origin="mcp")
    return reply(text.checkpoint_text(result), result)


def resume(ctx: Ctx, max_tokens: MaxTokens | None = None) -> CallToolResult:
    result = brain(ctx).resume(max_tokens)
    warnings = "".join(f"\n\nWarning: {w}" for w in result.warnings)
    # Claude Code shows the model the structured content when there is one: keep it the same
    # answer as the text (within max_tokens), not the whole state beside it.
    return CallToolResult(
        content=[TextContent(type="text", text=result.markdown + warnings)],
        structured_content={
            "markdown": result.markdown,
            "version": result.state.meta.version if result.state is not None else None,
            "tokens": result.tokens,
            "warnings": result.warnings,
        },
    )


def status(ctx: Ctx) -> CallToolResult:
    result = brain(ctx).status()
    return reply(text.status_text(result), result)


def rollback(ctx: Ctx, steps: Steps | None = None, version: Version | None = None) -> CallToolResult:
    result = brain(ctx).rollback(steps=steps, version=version)
    return reply(text.rollback_text(result), result)


def history(ctx: Ctx, limit: HistoryLimit = HISTORY_LIMIT_DEFAULT) -> CallToolResult:
    result = brain(ctx).history(limit)
    return reply(text.history_text(result), list(result))


def diff(ctx: Ctx, from_version: FromVersion, to_version: ToVersion) -> CallToolResult:
    result = brain(ctx).diff(from_version, to_version)
    return reply(text.diff_text(result), result)


def expand(ctx: Ctx, tool_use_id: ToolUseId, offset: CharOffset = 0) -> CallToolResult:
    # the transcript code (redaction rules included) loads on the first transcript tool call
    from infinite_context_brain.core.transcript import service as transcripts

    result = transcripts.expand(tool_use_id, None, _transcript_root(brain(ctx)), offset)
    more = (
        f"\n\n[characters {result.offset:,}-{result.next_offset:,} of {result.total_chars:,}; "
        f"call expand with offset={result.next_offset} for more]"
        if result.next_offset is not None
        else ""
    )
    return reply(result.text + more, result)


def context_meter(ctx: Ctx) -> CallToolResult:
    from infinite_context_brain.core.transcript import service as transcripts

    project = brain(ctx)
    result = transcripts.context_meter(None, _transcript_root(project), project.settings)
    return reply(
        text.meter_text(result),
        {
            "context_tokens": result.context_tokens,
            "context_window": result.context_window,
            "percent": result.percent,
            "model": result.model,
            "compactions": len(result.compactions),
            "by_category": result.by_category,
            "transcript": result.transcript,
        },
    )


CHECKPOINT_DESCRIPTION = (
    "Save the state of the work into the project brain so the next session (after /clear, a "
    "compaction or a restart) can continue. Call it at milestones: a subtask done, before a risky "
    "step, when the user changes direction. Fill the fields you know; each is merged as given: "
    "task and in_progress replace; next_steps is the whole list of what is left and replaces the "
    "stored one; blockers replace the blockers stated before; done, decisions (with their reason), "
    "files, notes and gotchas are added. `context` takes free text too: it is kept as written in "
    "the brain's journal, and read for the same fields."
)


def checkpoint_prompt(note: str = "") -> str:
    extra = f"\nAlso record: {note}" if note else ""
    return (
        "Call the infinite-context `checkpoint` tool now with what a colleague taking over would "
        "need: `task` (the user's overall request), `in_progress` (the subtask now), `next_steps` "
        "(everything still left, in order), `done` (finished since the last checkpoint), `decisions` "
        "(each with its `reason`), `blockers` (each with what you `tried`), `files` (paths you edited "
        f"or must read next), `gotchas` (what failed and what worked) and `notes`.{extra}"
    )


def resume_prompt(ctx: Ctx) -> str:
    try:
        markdown = brain(ctx).resume().markdown
    except InfiniteContextError as exc:
        markdown = f"(the project brain could not be read: {exc})"
    return (
        "Here is the saved context of this project. Read it, then continue with the current task; "
        "ask if anything is unclear.\n\n" + markdown
    )


def _transcript_root(project: ProjectBrain) -> Path:
    """Claude Code keys transcripts on the folder it started in: the folder ``locate_project``
    chose for this brain (``CLAUDE_PROJECT_DIR`` or this server's cwd unless overridden)."""
    return project.project.folder or project.project.root


def register(app: MCPServer[Any]) -> None:
    app.add_tool(checkpoint, description=CHECKPOINT_DESCRIPTION)
    app.add_tool(
        resume,
        description="Load the project brain as Markdown. Call at session start and after /clear.",
        annotations=READ_ONLY,
    )
    app.add_tool(
        status, description="Version, size, merger and history of the project brain.", annotations=READ_ONLY
    )
    app.add_tool(
        rollback,
        description="Restore an earlier version (written as a new version; history is kept).",
        annotations=DESTRUCTIVE,
    )
    app.add_tool(
        history, description="List the versions kept in history, newest first.", annotations=READ_ONLY
    )
    app.add_tool(
        diff,
        description="What changed between two versions (field by field and as a unified diff).",
        annotations=READ_ONLY,
    )
    app.add_tool(
        expand,
        description="The original output of a tool use that endless mode replaced by an observation "
        "(paged: pass next_offset for more).",
        annotations=READ_ONLY,
    )
    app.add_tool(
        context_meter,
        description="How full this Claude Code session's context window is, by category.",
        annotations=READ_ONLY,
    )
    app.prompt(name="checkpoint", description="Save this session's progress into the project brain.")(
        checkpoint_prompt
    )
    app.prompt(name="resume", description="Reload the project brain into this conversation.")(resume_prompt)
