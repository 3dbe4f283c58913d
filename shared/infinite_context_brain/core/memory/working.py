"""WorkingMemory: short-term items of one project kept under a token budget.

Every write goes to the Store before the call returns (the seed lost up to 30 s on a crash);
recency is the stored ``accessed_at`` (the seed reset it on restart); compaction archives instead
of destroying (the seed deleted). ``forget`` is the only real delete.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from ..errors import InvalidInput, NotFound, StorageError
from ..models import utcnow
from ..params import (
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
    check_model,
    validated,
)
from ..storage.parts import IndexedItem, IndexTerms, PutOutcome, Usage
from ..text import terms
from ..tokens import count_tokens
from . import compaction
from .model import (
    BudgetStatus,
    CompactionReport,
    MemoryConfig,
    MemoryItem,
    NewItem,
    QueryHit,
    RecallResult,
)
from .ranking import factor, top_by_retention
from .scoring import retention
from .text import auto_tags, detect_type, index_terms, normalize_tags, redact, tag_terms

if TYPE_CHECKING:
    from ..config import Settings
    from ..storage.parts import MemoryIndex

log = logging.getLogger(__name__)

CANDIDATES = 30  # BM25 candidates the factor re-ranks (at least 3x the limit)
#: budget by MCP client name (lowercase substring), as the seed detected it
CLIENT_BUDGETS = {"claude": 80_000, "cursor": 60_000}
DEFAULT_BUDGET = 100_000


def indexed(items: list[MemoryItem]) -> list[IndexedItem]:
    """Items with the terms the store indexes them by (the store itself knows no text analysis)."""
    out = []
    for item in items:
        body, tags = index_terms(item.content, item.summary, item.tags)
        out.append(IndexedItem(item, IndexTerms(tuple(body), tuple(tags))))
    return out


class WorkingMemory:
    def __init__(
        self,
        store: MemoryIndex,
        session_id: str,
        settings: Settings,
        client_name: str | None = None,
        *,
        create_session: Callable[[], str] | None = None,
        store_replaced: Callable[[], str | None] | None = None,
    ) -> None:
        """``session_id`` may be "" for a project that has no brain yet: reads then find nothing,
        and the first write gets its id from ``create_session`` (which writes the project's id
        file): reading never creates it. ``store_replaced`` says whether the store was wiped
        or replaced since this machine last used it (identity.py): ``recall``, the call an
        assistant makes first, asks and tells."""
        self.store = store
        self.session_id = session_id
        self.settings = settings
        self.client_name = client_name
        self._create_session = create_session
        self._store_replaced = store_replaced

    def _writing(self) -> str:
        """The session a new item or setting goes under, created on the first write."""
        if not self.session_id and self._create_session is not None:
            self.session_id = self._create_session()
        return self.session_id

    # ---- configuration ------------------------------------------------------------------------
    def config(self) -> MemoryConfig:
        return self._config(self.store.memory_config(self.session_id))

    def _config(self, stored: dict[str, Any] | None) -> MemoryConfig:
        """The configuration from what the store holds (``memory_config``), else the settings."""
        if stored and stored.get("source") == "configure":
            try:
                return MemoryConfig.model_validate(stored)
            except ValidationError:
                pass
        s = self.settings
        base = {
            "auto_compact": s.memory_auto_compact,
            "threshold": s.memory_threshold,
            "target": s.memory_target,
        }
        if s.budget is not None:
            return MemoryConfig(budget=s.budget, source="setting", **base)
        name = (self.client_name or "").lower()
        for needle, budget in CLIENT_BUDGETS.items():
            if needle in name:
                return MemoryConfig(budget=budget, source=f"client:{self.client_name}", **base)
        return MemoryConfig(budget=DEFAULT_BUDGET, source="default", **base)

    @validated
    def configure(
        self,
        budget: MemoryBudget | None = None,
        auto_compact: bool | None = None,
        threshold: Threshold | None = None,
    ) -> MemoryConfig:
        current = self.config().model_dump()
        changes = {"budget": budget, "auto_compact": auto_compact, "threshold": threshold}
        current.update({k: v for k, v in changes.items() if v is not None}, source="configure")
        if current["target"] >= current["threshold"]:
            current["target"] = round(current["threshold"] * 0.9, 3)  # compaction must free something
        config = check_model(MemoryConfig, current)
        self.store.memory_set_config(self._writing(), config.model_dump())
        return config

    def budget_status(self) -> BudgetStatus:
        return self._budget(self.config(), self.store.memory_usage(self.session_id))

    @staticmethod
    def _budget(config: MemoryConfig, usage: Usage) -> BudgetStatus:
        used, live, pinned, archived = usage
        return BudgetStatus(
            budget=config.budget,
            used=used,
            items=live,
            pinned=pinned,
            archived=archived,
            percent=round(100 * used / config.budget, 1),
            auto_compact=config.auto_compact,
            threshold=config.threshold,
            source=config.source,
        )

    # ---- writes -------------------------------------------------------------------------------
    def _new_item(self, raw: dict[str, Any], where: str = "") -> MemoryItem:
        """A new item from what the caller gave, checked against the shared rules (NewItem)."""
        given = check_model(NewItem, raw, where)
        content = redact(given.content)
        summary = redact(given.summary) if given.summary and given.summary.strip() else None
        content_type = given.content_type or detect_type(content)
        fields = given.model_dump(
            include={"id", "importance", "pinned", "created_at", "accessed_at"}, exclude_none=True
        )
        return MemoryItem(
            content=content,
            summary=summary,
            tags=normalize_tags(given.tags) if given.tags else auto_tags(content, content_type),
            content_type=content_type,
            tokens=count_tokens(content),
            **fields,
        )

    def store_item(self, **fields: Any) -> tuple[MemoryItem, CompactionReport | None]:
        item = self._new_item(fields)
        left = self.store.memory_put(self._writing(), indexed([item]))
        return item, self._after_put(left)

    def bulk_store(
        self, items: Any, replace: bool = False
    ) -> tuple[list[MemoryItem], CompactionReport | None]:
        """Store many items at once, all or nothing. An item whose ``id`` already exists is refused
        (naming the ids) unless ``replace`` is true; two items with one id are always refused."""
        if not isinstance(items, list) or not items:
            raise InvalidInput(
                "items", "must be a non-empty JSON array of objects", fix='[{"content": "..."}]'
            )
        built = []
        for n, raw in enumerate(items):
            if not isinstance(raw, dict):
                raise InvalidInput(f"items[{n}]", "is not an object", fix='each item is {"content": "..."}')
            built.append(self._new_item(raw, f"items[{n}]."))
        self._check_new_ids(built, replace)
        left = self.store.memory_put(self._writing(), indexed(built))  # all or nothing
        return built, self._after_put(left)

    def _check_new_ids(self, built: list[MemoryItem], replace: bool) -> None:
        seen: dict[str, int] = {}
        for n, item in enumerate(built):
            if item.id in seen:
                raise InvalidInput(
                    f"items[{n}].id",
                    f"{item.id!r} is also the id of items[{seen[item.id]}]",
                    fix="give each item its own id, or leave ids out (new ones are made)",
                )
            seen[item.id] = n
        if replace:
            return
        existing = sorted(self.store.memory_get(self.session_id, list(seen)))
        if existing:
            more = f" and {len(existing) - 10} more" if len(existing) > 10 else ""
            shown = ", ".join(existing[:10]) + more
            raise InvalidInput(
                "items",
                f"{len(existing)} id(s) already exist: {shown}",
                fix="pass replace=true (CLI: --replace) to replace those items, or leave ids out",
            )

    def _get(self, item_id: str) -> MemoryItem:
        found = self.store.memory_get(self.session_id, [item_id]).get(item_id)
        if found is None:
            raise NotFound(f"no memory item {item_id!r}", fix="`list` or `query` shows the ids")
        return found

    @validated
    def update(
        self,
        item_id: MemoryId,
        content: MemoryContent | None = None,
        summary: Summary | None = None,
        tags: Tags | None = None,
        importance: Importance | None = None,
        restore: bool = False,
    ) -> MemoryItem:
        item = self._get(item_id)
        changes: dict[str, Any] = {}
        if content is not None:
            fresh = self._new_item({"content": content})
            changes |= {"content": fresh.content, "content_type": fresh.content_type, "tokens": fresh.tokens}
        if summary is not None:
            changes["summary"] = redact(summary) if summary.strip() else None
        if tags is not None:
            changes["tags"] = normalize_tags(tags)
        if importance is not None:
            changes["importance"] = importance
        if restore:
            changes |= {"archived": False, "promoted": False}
        updated = item.model_copy(update=changes)
        if updated.promoted and updated.summary:
            updated.tokens = count_tokens(updated.summary)
        elif "tokens" not in changes:
            updated.tokens = count_tokens(updated.content)
        self.store.memory_put(self.session_id, indexed([updated]))
        return updated

    @validated
    def set_pinned(self, item_id: MemoryId, pinned: bool) -> MemoryItem:
        item = self._get(item_id).model_copy(update={"pinned": pinned})
        self.store.memory_update(self.session_id, [item])
        return item

    @validated
    def forget(self, item_id: MemoryId) -> None:
        if not self.store.memory_delete(self.session_id, [item_id]):
            raise NotFound(f"no memory item {item_id!r}", fix="`list` or `query` shows the ids")

    # ---- reads --------------------------------------------------------------------------------
    @validated
    def query(
        self,
        text: MemoryQuery = "",
        limit: SearchLimit = 10,
        tags: Tags | None = None,
        archived: bool = False,
    ) -> list[QueryHit]:
        """Live and archived items (``archived``: the archive only), ordered as ranking.py says."""
        wanted = set(normalize_tags(tags or []))
        query_terms = terms(text or "")
        scope = True if archived else None
        if not query_terms and not wanted:
            raise InvalidInput(
                "query", "is empty and no tags were given", fix="pass words to search for, or tags"
            )
        now = utcnow()
        if not query_terms:  # tags only: by retention, the archive after live items
            found = [i for i in self.store.memory_all(self.session_id, scope) if wanted <= set(i.tags)]
            rows = [(retention(i, now), 0.0, retention(i, now), i) for i in found]
            rows.sort(key=lambda row: (row[3].archived, -row[0], row[3].id))
        else:
            rows = self._ranked(query_terms, limit, wanted, scope, now)
        hits = [
            QueryHit.model_construct(
                item=item, score=round(c, 4), relevance=round(r, 4), retention=round(k, 4)
            )
            for c, r, k, item in rows[:limit]
        ]
        self._touch([h.item for h in hits if not h.item.archived], now)
        return hits

    def _ranked(
        self, query_terms: list[str], limit: int, wanted: set[str], scope: bool | None, now: Any
    ) -> list[tuple[float, float, float, MemoryItem]]:
        """(score, relevance, retention, item), best first, among the BM25 best candidates."""
        asked = set(query_terms)
        ranked = self.store.memory_search(self.session_id, query_terms, max(CANDIDATES, limit * 3), scope)
        found = self.store.memory_get(self.session_id, [i for i, _ in ranked])
        best = ranked[0][1] if ranked and ranked[0][1] > 0 else 1.0
        rows = []
        for item_id, bm25 in ranked:
            item = found.get(item_id)
            if item is None or not wanted <= set(item.tags):
                continue
            kept = retention(item, now)
            shared = asked & {t for tag in item.tags for t in tag_terms(tag)}
            combined = bm25 * factor(item, kept, len(shared) / len(asked))
            rows.append((combined / best, bm25 / best, kept, item))
        rows.sort(key=lambda row: (-row[0], row[3].id))
        return rows

    def _touch(self, items: list[MemoryItem], now: Any) -> None:
        """Access bookkeeping of what a query returned; a store that cannot take the write now
        (busy, read-only) costs the bookkeeping, never the answer."""
        if not items:
            return
        touched = [
            i.model_copy(update={"accessed_at": now, "access_count": i.access_count + 1}) for i in items
        ]
        try:
            self.store.memory_accessed(self.session_id, touched)
        except StorageError as exc:
            log.warning("access times of working-memory items not stored: %s", exc)

    @validated
    def recall(self, limit: SearchLimit = 10) -> RecallResult:
        """Budget status and the items most worth keeping in mind (pinned first)."""
        # the configuration and usage are read once, for the auto-compaction check and the budget
        # (each a Redis round trip; usage read again only when a compaction changed it)
        warning = self._store_replaced() if self._store_replaced is not None else None
        config, usage = self.config(), self.store.memory_usage(self.session_id)
        report = self._auto_compact(config, usage[0])
        if report is not None:
            usage = self.store.memory_usage(self.session_id)
        items = top_by_retention(self.store, self.session_id, limit, utcnow())  # indexed, not a scan
        return RecallResult(
            budget=self._budget(config, usage),
            items=items,
            compaction=report,
            warnings=[warning] if warning else [],
        )

    @validated
    def list_items(
        self, offset: PageOffset = 0, limit: PageLimit = 20, archived: bool = False
    ) -> list[MemoryItem]:
        return self.store.memory_page(self.session_id, archived, offset, limit)

    @validated
    def export(self, summaries_only: bool = False) -> list[dict[str, Any]]:
        items = self.store.memory_all(self.session_id, archived=None)
        items.sort(key=lambda i: i.created_at)
        if not summaries_only:
            return [i.model_dump(mode="json") for i in items]
        return [
            {
                "id": i.id,
                "summary": i.summary or i.content[:200],
                "tags": i.tags,
                "importance": i.importance,
                "pinned": i.pinned,
                "archived": i.archived,
            }
            for i in items
        ]

    def import_items(self, items: Any, replace: bool = False) -> int:
        built, _ = self.bulk_store(items, replace)
        return len(built)

    # ---- compaction ---------------------------------------------------------------------------
    def _after_put(self, left: PutOutcome) -> CompactionReport | None:
        """Auto-compaction after a write, from the usage and configuration the put read with it."""
        return self._auto_compact(self._config(left.config), left.usage[0])

    def _auto_compact(self, config: MemoryConfig, used: int) -> CompactionReport | None:
        """Compact down to the configured target once ``used`` tokens reached the threshold."""
        if not config.auto_compact or used < config.threshold * config.budget:
            return None
        return self.compact()

    @validated
    def compact(self, target: CompactTarget | None = None) -> CompactionReport:
        """Compact down to ``target``: below 1 a share of the budget (0.5), from 1 on tokens."""
        started = time.perf_counter()
        config = self.config()
        if target is None:
            goal = int(config.target * config.budget)
        else:
            goal = int(target * config.budget) if target < 1 else int(target)
        items = self.store.memory_all(self.session_id, archived=False)
        before = sum(i.tokens for i in items)
        planned = compaction.plan(items, goal, count_tokens, utcnow())
        if planned.changed:
            self.store.memory_update(self.session_id, list(planned.changed.values()))
        after_items = [planned.changed.get(i.id, i) for i in items]
        return CompactionReport(
            before_tokens=before,
            after_tokens=planned.used_after,
            target_tokens=goal,
            promoted=planned.promoted,
            deduplicated=planned.deduplicated,
            evicted=planned.evicted,
            missing_summary=[i.id for i in after_items if not i.archived and not i.summary][:50],
            duration_ms=round((time.perf_counter() - started) * 1000, 2),
        )
