"""The working-memory part of the Store contract (both backends implement it).

Every write is durable when it returns (one SQLite transaction / one Redis MULTI). Search goes
through a real index kept in the same transaction as the item: SQLite FTS5 (bm25 with k1 1.2,
b 0.75, tag column weighted 5x) or, on Redis, an inverted index of per-term posting hashes scored
with the same BM25 in the client (plain Redis has no full-text search; postings keep a query's
cost proportional to the items that contain its terms, not to all items).

The store knows no text analysis: the caller (``memory.working``) turns an item into
``IndexTerms`` and passes them with the item, so storage never imports the memory layer's
vocabulary and a query's terms and an item's terms always come from the same function.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass
from typing import Any, NamedTuple

from ..memory.model import MemoryItem


@dataclass(frozen=True)
class IndexTerms:
    """What the search index holds for one item: single words (no whitespace), each repeated as
    often as it occurs, because BM25 counts them. Order carries no meaning."""

    body: tuple[str, ...]
    tags: tuple[str, ...]


class IndexedItem(NamedTuple):
    """An item with the terms it is found by."""

    item: MemoryItem
    terms: IndexTerms


class MemoryStore(abc.ABC):
    @abc.abstractmethod
    def memory_put(self, session_id: str, items: list[IndexedItem]) -> None:
        """Insert or replace items and their index entries in one transaction."""

    @abc.abstractmethod
    def memory_update(self, session_id: str, items: list[MemoryItem]) -> None:
        """Rewrite existing items whose text is unchanged (archived, promoted, pinned, tokens):
        their index entries stay as they are."""

    @abc.abstractmethod
    def memory_touch(self, session_id: str, items: list[MemoryItem]) -> None:
        """Store access bookkeeping (accessed_at, access_count) without re-indexing."""

    @abc.abstractmethod
    def memory_get(self, session_id: str, ids: list[str]) -> dict[str, MemoryItem]: ...

    @abc.abstractmethod
    def memory_all(self, session_id: str, archived: bool | None = False) -> list[MemoryItem]:
        """Every item (live, archived, or both with None)."""

    @abc.abstractmethod
    def memory_page(self, session_id: str, archived: bool, offset: int, limit: int) -> list[MemoryItem]:
        """Newest first."""

    @abc.abstractmethod
    def memory_delete(self, session_id: str, ids: list[str]) -> int:
        """Really delete (the only operation that loses content); returns how many existed."""

    @abc.abstractmethod
    def memory_search(
        self, session_id: str, terms: list[str], limit: int, archived: bool
    ) -> list[tuple[str, float]]:
        """(item id, BM25 relevance >= 0), best first, among live or archived items."""

    @abc.abstractmethod
    def memory_usage(self, session_id: str) -> tuple[int, int, int, int]:
        """(live tokens, live items, pinned items, archived items)."""

    @abc.abstractmethod
    def memory_export(self, session_id: str) -> list[IndexedItem]:
        """Every readable item (live and archived) with the index terms stored for it, so a copy
        is found by the same words without re-analysing the text (``store copy``)."""

    @abc.abstractmethod
    def memory_sessions(self) -> list[str]:
        """Sessions holding working-memory items or a memory configuration."""

    @abc.abstractmethod
    def memory_config(self, session_id: str) -> dict[str, Any] | None: ...

    @abc.abstractmethod
    def memory_set_config(self, session_id: str, config: dict[str, Any]) -> None: ...
