"""Working-memory MCP tools, with the seed compactor's names and meaning. Each parses its
arguments and makes one WorkingMemory call; errors are mapped by the server's ``call``, which
runs bounded work on the event loop and compaction, bulk writes and exports in a worker thread."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Annotated, Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.types import CallToolResult, TextContent
from pydantic import BaseModel, Field

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

Call = Callable[..., Awaitable[Any]]  # await call(fn(WorkingMemory), client name=None, inline=True)


def client_name(ctx: Context[Any, Any] | None) -> str | None:
    """The MCP client's name from its initialize request (budget detection)."""
    try:
        params = ctx.session.client_params if ctx is not None else None
        return params.client_info.name if params is not None else None
    except Exception:  # no session in this context: detection simply does not apply
        return None


def _reply(text: str, data: BaseModel | dict[str, Any]) -> CallToolResult:
    """``data`` is a model, or a dict already made of JSON values (``lean`` items, dumped models):
    used as it is (a JSON round trip of a 10-item reply cost ~0.05 ms a call)."""
    structured = data.model_dump(mode="json") if isinstance(data, BaseModel) else data
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=structured)


#: the tools whose work is bounded and runs on the event loop (``call``'s ``inline``): the stdio
#: transport may answer their calls itself (``fast_calls``); the others run in a worker thread
BOUNDED = frozenset({"recall", "store", "query", "update", "pin", "unpin", "forget", "list", "configure"})

#: replies are lean: items without their full content unless asked (issue 19)
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


def register(app: MCPServer, call: Call) -> None:
    @app.tool(
        name="recall",
        description="Call first: working-memory budget status and the items most worth keeping in mind.",
        annotations=READ_ONLY,
    )
    async def recall(
        limit: SearchLimit = 10, full: Full = False, ctx: Context[Any, Any] | None = None
    ) -> CallToolResult:
        result = await call(lambda m: m.recall(limit), client_name(ctx))
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
        return _reply(f"{head}\n{body}{compaction_text(result.compaction)}", structured)

    @app.tool(name="store", description="Remember something (error, decision, code, note). Durable at once.")
    async def store(
        content: MemoryContent,
        summary: Summary | None = None,
        tags: Tags | None = None,
        importance: Importance = 5,
        pinned: Annotated[bool, Field(description="Never compacted away.")] = False,
        ctx: Context[Any, Any] | None = None,
    ) -> CallToolResult:
        item, report = await call(
            lambda m: m.store_item(
                content=content, summary=summary, tags=tags, importance=importance, pinned=pinned
            ),
            client_name(ctx),
        )
        return _reply(
            f"Stored {item.id} ({item.content_type}, {item.tokens} tokens).{compaction_text(report)}",
            lean(item),
        )

    @app.tool(
        name="query",
        description="Search working memory (BM25 on words and tags, with the retention score).",
        annotations=READ_ONLY,
    )
    async def query(
        query: MemoryQuery = "",
        limit: SearchLimit = 10,
        tags: Annotated[Tags | None, Field(description="Only items carrying all of these tags.")] = None,
        archived: Annotated[bool, Field(description="Search the archive instead.")] = False,
        full: Full = False,
    ) -> CallToolResult:
        hits: list[QueryHit] = await call(lambda m: m.query(query, limit, tags, archived))
        text = _lines([h.item for h in hits], full, [h.score for h in hits]) or "No match."
        found = [
            {"item": lean(h.item, full), "score": h.score, "relevance": h.relevance, "retention": h.retention}
            for h in hits
        ]
        return _reply(text, {"items": found})

    @app.tool(
        name="compact", description="Compact working memory now (summaries, dedup, eviction to the archive)."
    )
    async def compact(
        target: CompactTarget | None = None,
    ) -> CallToolResult:
        report: CompactionReport = await call(lambda m: m.compact(target), inline=False)
        return _reply(compaction_text(report).strip() + f" ({report.duration_ms:.0f} ms)", report)

    @app.tool(name="update", description="Change an item; restore=true brings an archived item back whole.")
    async def update(
        id: MemoryId,
        content: MemoryContent | None = None,
        summary: Summary | None = None,
        tags: Tags | None = None,
        importance: Importance | None = None,
        restore: bool = False,
    ) -> CallToolResult:
        item = await call(lambda m: m.update(id, content, summary, tags, importance, restore))
        return _reply(f"Updated {memory_line(item)}", lean(item))

    @app.tool(name="pin", description="Pin an item: compaction never touches it.")
    async def pin(id: MemoryId) -> CallToolResult:
        item = await call(lambda m: m.set_pinned(id, True))
        return _reply(f"Pinned {item.id}.", lean(item))

    @app.tool(name="unpin", description="Unpin an item.")
    async def unpin(id: MemoryId) -> CallToolResult:
        item = await call(lambda m: m.set_pinned(id, False))
        return _reply(f"Unpinned {item.id}.", lean(item))

    @app.tool(
        name="forget",
        description="Delete an item for good (the only real delete; compaction archives).",
        annotations=DESTRUCTIVE,
    )
    async def forget(id: MemoryId) -> CallToolResult:
        await call(lambda m: m.forget(id))
        return _reply(f"Forgot {id}.", {"forgotten": id})

    @app.tool(name="list", description="Items, newest first, a page at a time.", annotations=READ_ONLY)
    async def list_items(
        offset: PageOffset = 0,
        limit: PageLimit = 20,
        archived: bool = False,
        full: Full = False,
    ) -> CallToolResult:
        items = await call(lambda m: m.list_items(offset, limit, archived))
        return _reply(_lines(items, full) or "No items.", {"items": [lean(i, full) for i in items]})

    @app.tool(
        name="bulk_store",
        description="Store many items at once: a JSON array of "
        "{content, summary?, tags?, importance?, pinned?, id?}. "
        "An existing id is refused unless replace=true.",
    )
    async def bulk_store(
        items: Annotated[str, Field(description="A JSON array of objects.")],
        replace: Annotated[bool, Field(description="Replace items whose id already exists.")] = False,
    ) -> CallToolResult:
        built, report = await call(lambda m: m.bulk_store(_json_array(items), replace), inline=False)
        return _reply(
            f"Stored {len(built)} items.{compaction_text(report)}", {"items": [lean(i) for i in built]}
        )

    @app.tool(
        name="export",
        description="Every item (archive included) as JSON; summaries_only for a short version.",
        annotations=READ_ONLY,
    )
    async def export(summaries_only: bool = False) -> CallToolResult:
        data = await call(lambda m: m.export(summaries_only), inline=False)
        return _reply(json.dumps(data, indent=1), {"items": data})

    @app.tool(
        name="configure", description="Set the working-memory budget, auto-compaction and its threshold."
    )
    async def configure(
        budget: MemoryBudget | None = None,
        auto_compact: bool | None = None,
        threshold: Threshold | None = None,
    ) -> CallToolResult:
        config = await call(lambda m: m.configure(budget, auto_compact, threshold))
        return _reply(
            f"Budget {config.budget:,} tokens; auto-compact {'on' if config.auto_compact else 'off'} at "
            f"{config.threshold:.0%} down to {config.target:.0%}.",
            config,
        )


def _json_array(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidInput(
            "items", f"is not valid JSON ({exc.msg} at character {exc.pos})", fix='pass [{"content": "..."}]'
        ) from None
