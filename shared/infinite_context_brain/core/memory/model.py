"""Working-memory models: items, budget configuration, and what the operations return."""

from __future__ import annotations

import math
import uuid
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from ..clock import utcnow
from ..params import Importance, MemoryBudget, MemoryContent, MemoryId, Summary, Tags, Threshold

ContentType = Literal["error", "decision", "code", "prose", "tool_output"]


class MemoryItem(BaseModel):
    model_config = ConfigDict(extra="ignore", defer_build=True)

    id: str = Field(default_factory=lambda: uuid.uuid4().hex[:12])
    content: str
    summary: str | None = None
    tags: list[str] = Field(default_factory=list)
    importance: Importance = 5
    pinned: bool = False
    content_type: ContentType = "prose"
    created_at: datetime = Field(default_factory=utcnow)
    accessed_at: datetime = Field(default_factory=utcnow)
    access_count: int = 0
    tokens: int = 0
    #: outside the budget; still searchable with archived=True, restorable
    archived: bool = False
    #: set when compaction promoted the summary: the live item counts the summary's tokens only,
    #: the full text stays here
    promoted: bool = False

    @property
    def live_text(self) -> str:
        """What counts against the budget and is shown: the summary once promoted."""
        return self.summary if self.promoted and self.summary else self.content


class NewItem(BaseModel):
    """What a caller gives for a new item (``store``, ``bulk_store``, ``import``), checked against
    the shared rules (core.params). Strict: ``"5"`` is not an importance; the timestamps of an
    exported item arrive as ISO text. Other keys of an export (tokens, archived...) are ignored."""

    model_config = ConfigDict(extra="ignore", strict=True, defer_build=True)

    content: MemoryContent
    summary: Summary | None = None
    tags: Tags | None = None
    importance: Importance = 5
    pinned: bool = False
    content_type: ContentType | None = None
    id: MemoryId | None = None
    created_at: datetime | None = Field(None, strict=False)
    accessed_at: datetime | None = Field(None, strict=False)


class MemoryConfig(BaseModel):
    model_config = ConfigDict(extra="ignore", defer_build=True)

    budget: MemoryBudget = 100_000
    auto_compact: bool = True
    threshold: Threshold = 0.9  # compact when usage reaches this share
    target: Threshold = 0.8  # ... down to this share
    #: where the budget came from: client name, setting or configure
    source: str = "default"


class BudgetStatus(BaseModel):
    budget: int
    used: int
    items: int
    pinned: int
    archived: int
    percent: float
    auto_compact: bool
    threshold: float
    source: str


class QueryHit(BaseModel):
    item: MemoryItem
    score: float
    relevance: float
    retention: float


class CompactionReport(BaseModel):
    before_tokens: int
    after_tokens: int
    target_tokens: int
    promoted: list[str] = Field(default_factory=list)
    deduplicated: list[str] = Field(default_factory=list)
    evicted: list[str] = Field(default_factory=list)
    #: live items with no summary: the assistant should `update` them with one
    missing_summary: list[str] = Field(default_factory=list)
    duration_ms: float = 0.0


class RecallResult(BaseModel):
    budget: BudgetStatus
    items: list[MemoryItem]
    compaction: CompactionReport | None = None
    #: what the user must know first (the store was wiped or replaced: its items are gone)
    warnings: list[str] = Field(default_factory=list)


# ---- the item's standing: what the store orders live items by ------------------------------
# Data about an item alone (no clock, no text analysis), so storage may compute its index key
# from it; the time-dependent part of the retention score is in ``scoring``.

#: content type -> (retention multiplier, recency half-life in seconds)
TYPE_WEIGHTS: dict[str, tuple[float, float]] = {
    "error": (1.5, 30 * 60),
    "decision": (1.3, 6 * 3600),
    "code": (1.2, 6 * 3600),
    "prose": (1.0, 2 * 3600),
    "tool_output": (0.7, 15 * 60),
}
LARGE_ITEM_TOKENS = 2_000
#: added to a pinned item's rank key: larger than any retention, so pinned items come first
PIN_RANK = 10.0


def standing(item: MemoryItem) -> float:
    """The time-independent part of the retention score (importance, access, size)."""
    multiplier = TYPE_WEIGHTS[item.content_type][0]
    access = min(1.0, math.log1p(item.access_count) / math.log1p(20))
    size = min(1.0, item.tokens / LARGE_ITEM_TOKENS)
    return (0.4 * item.importance / 10 + 0.2 * access - 0.1 * size) * multiplier


def rank_key(item: MemoryItem) -> float:
    """What the store orders live items by for ``recall``: standing, pinned items first."""
    return standing(item) + (PIN_RANK if item.pinned else 0.0)
