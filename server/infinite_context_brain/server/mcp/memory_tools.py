"""Working-memory MCP tools, with the seed compactor's names and meaning: one module-level
function per tool, its arguments typed by the rules in ``core.params``, making one WorkingMemory
call. The SDK runs each (plain functions) in a worker thread, so a slow store never holds the
event loop; errors are mapped in one place, ``app.Server.call_tool``."""

from __future__ import annotations

import json
from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult
from pydantic import Field

from infinite_context_brain.core.errors import InvalidInput

# memory.model is loaded with the core models anyway; memory.working (search, compaction) is
# imported by ProjectBrain.memory() on the first memory call, not at server start.
from infinite_context_brain.core.memory.model import CompactionReport, MemoryItem, QueryHit
from infinite_context_brain.core.params import (
    CompactTarget,
    Importance,
    MemoryBudget,
    MemoryContent,
    MemoryId,
    MemoryQuery,
    PageLimit,
    PageOffset,
    SearchLimit,
    Summary,
    Tags,
    Threshold,
)

from ..text import compaction_text, memory_line, squeeze
from .hints import DESTRUCTIVE, READ_ONLY
from .lifespan import Ctx, memory
from .replies import reply

#: replies are lean: items without their full content unless asked
Full = Annotated[bool, Field(description="Return each item's full content too (default: a preview).")]
PREVIEW_CHARS = 200


def lean(item: MemoryItem, full: bool = False) -> dict[str, Any]:
    """An item as the memory tools return it: every field but ``content``, plus ``preview`` (the
    summary, else the first line, at most 200 characters); ``content`` too when ``full``."""
    data = item.model_dump(mode="json", exclude=None if full else {"content"})
    text = item.summary or next((line for line in item.live_text.splitlines() if line.strip()), "")
    data["preview"] = squeeze(text, PREVIEW_CHARS)
    return data


def _lines(items: list[MemoryItem], full: bool, scores: list[float] | None = None) -> str:
    out = []
    for n, item in enumerate(items):
        line = memory_line(item) + (f" (score {scores[n]})" if scores is not None else "")
        out.append(line + ("\n" + item.content if full else ""))
    return "\n".join(out)


def recall(ctx: Ctx, limit: SearchLimit = 10, full: Full = False) -> CallToolResult:
    result = memory(ctx).recall(limit)
    b = result.budget
    head = (
        f"Budget: {b.used:,}/{b.budget:,} tokens ({b.percent}%), {b.items} items, "
        f"{b.pinned} pinned, {b.archived} archived."
    )
    body = _lines(result.items, full) or "(no items yet: `store` what you must not forget)"
    structured = {
        "budget": result.budget.model_dump(mode="json"),
        "items": [lean(i, full) for i in result.items],
        "compaction": result.compaction.model_dump(mode="json") if result.compaction else None,
    }
    return reply(f"{head}\n{body}{compaction_text(result.compaction)}", structured)


def store(
    ctx: Ctx,
    content: MemoryContent,
    summary: Summary | None = None,
    tags: Tags | None = None,
    importance: Importance = 5,
    pinned: Annotated[bool, Field(description="Never compacted away.")] = False,
) -> CallToolResult:
    item, report = memory(ctx).store_item(
        content=content, summary=summary, tags=tags, importance=importance, pinned=pinned
    )
    return reply(
        f"Stored {item.id} ({item.content_type}, {item.tokens} tokens).{compaction_text(report)}", lean(item)
    )


def query(
    ctx: Ctx,
    query: MemoryQuery = "",
    limit: SearchLimit = 10,
    tags: Annotated[Tags | None, Field(description="Only items carrying all of these tags.")] = None,
    archived: Annotated[bool, Field(description="Search the archive instead.")] = False,
    full: Full = False,
) -> CallToolResult:
    hits: list[QueryHit] = memory(ctx).query(query, limit, tags, archived)
    text = _lines([h.item for h in hits], full, [h.score for h in hits]) or "No match."
    found = [
        {"item": lean(h.item, full), "score": h.score, "relevance": h.relevance, "retention": h.retention}
        for h in hits
    ]
    return reply(text, {"items": found})


def compact(ctx: Ctx, target: CompactTarget | None = None) -> CallToolResult:
    report: CompactionReport = memory(ctx).compact(target)
    return reply(compaction_text(report).strip() + f" ({report.duration_ms:.0f} ms)", report)


def update(
    ctx: Ctx,
    id: MemoryId,
    content: MemoryContent | None = None,
    summary: Summary | None = None,
    tags: Tags | None = None,
    importance: Importance | None = None,
    restore: bool = False,
) -> CallToolResult:
    item = memory(ctx).update(id, content, summary, tags, importance, restore)
    return reply(f"Updated {memory_line(item)}", lean(item))


def pin(ctx: Ctx, id: MemoryId) -> CallToolResult:
    item = memory(ctx).set_pinned(id, True)
    return reply(f"Pinned {item.id}.", lean(item))


def unpin(ctx: Ctx, id: MemoryId) -> CallToolResult:
    item = memory(ctx).set_pinned(id, False)
    return reply(f"Unpinned {item.id}.", lean(item))


def forget(ctx: Ctx, id: MemoryId) -> CallToolResult:
    memory(ctx).forget(id)
    return reply(f"Forgot {id}.", {"forgotten": id})


def list_items(
    ctx: Ctx,
    offset: PageOffset = 0,
    limit: PageLimit = 20,
    archived: bool = False,
    full: Full = False,
) -> CallToolResult:
    items = memory(ctx).list_items(offset, limit, archived)
    return reply(_lines(items, full) or "No items.", {"items": [lean(i, full) for i in items]})


def bulk_store(
    ctx: Ctx,
    items: Annotated[str, Field(description="A JSON array of objects.")],
    replace: Annotated[bool, Field(description="Replace items whose id already exists.")] = False,
) -> CallToolResult:
    built, report = memory(ctx).bulk_store(_json_array(items), replace)
    return reply(f"Stored {len(built)} items.{compaction_text(report)}", {"items": [lean(i) for i in built]})


def export(ctx: Ctx, summaries_only: bool = False) -> CallToolResult:
    data = memory(ctx).export(summaries_only)
    return reply(json.dumps(data, indent=1), {"items": data})


def configure(
    ctx: Ctx,
    budget: MemoryBudget | None = None,
    auto_compact: bool | None = None,
    threshold: Threshold | None = None,
) -> CallToolResult:
    config = memory(ctx).configure(budget, auto_compact, threshold)
    return reply(
        f"Budget {config.budget:,} tokens; auto-compact {'on' if config.auto_compact else 'off'} at "
        f"{config.threshold:.0%} down to {config.target:.0%}.",
        config,
    )


def register(app: MCPServer[Any]) -> None:
    app.add_tool(
        recall,
        description="Call first: working-memory budget status and the items most worth keeping in mind.",
        annotations=READ_ONLY,
    )
    app.add_tool(store, description="Remember something (error, decision, code, note). Durable at once.")
    app.add_tool(
        query,
        description="Search working memory (BM25 on words and tags, with the retention score).",
        annotations=READ_ONLY,
    )
    app.add_tool(
        compact, description="Compact working memory now (summaries, dedup, eviction to the archive)."
    )
    app.add_tool(update, description="Change an item; restore=true brings an archived item back whole.")
    app.add_tool(pin, description="Pin an item: compaction never touches it.")
    app.add_tool(unpin, description="Unpin an item.")
    app.add_tool(
        forget,
        description="Delete an item for good (the only real delete; compaction archives).",
        annotations=DESTRUCTIVE,
    )
    app.add_tool(
        list_items, name="list", description="Items, newest first, a page at a time.", annotations=READ_ONLY
    )
    app.add_tool(
        bulk_store,
        description="Store many items at once: a JSON array of "
        "{content, summary?, tags?, importance?, pinned?, id?}. "
        "An existing id is refused unless replace=true.",
    )
    app.add_tool(
        export,
        description="Every item (archive included) as JSON; summaries_only for a short version.",
        annotations=READ_ONLY,
    )
    app.add_tool(configure, description="Set the working-memory budget, auto-compaction and its threshold.")


def _json_array(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidInput(
            "items", f"is not valid JSON ({exc.msg} at character {exc.pos})", fix='pass [{"content": "..."}]'
        ) from None
