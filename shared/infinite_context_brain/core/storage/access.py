"""Access bookkeeping (``accessed_at``, ``access_count``) kept beside an item's JSON.

A query records which items it returned (``MemoryIndex.memory_accessed``) by writing two fields
next to the item, never the item itself, so it cannot undo a concurrent change of the item's
text, pins or tags; a read puts them back into the item (``parse_item``).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from ..memory.model import MemoryItem

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
MICROSECOND = timedelta(microseconds=1)


def micros(when: datetime) -> int:
    """A time as whole microseconds since the epoch (exact both ways, unlike a float)."""
    return ((when if when.tzinfo else when.replace(tzinfo=UTC)) - EPOCH) // MICROSECOND


def from_micros(value: int) -> datetime:
    return EPOCH + timedelta(microseconds=value)


def apply_access(item: MemoryItem, accessed: int | None, count: int | None) -> MemoryItem:
    """``item`` with the access fields the store keeps beside its JSON (when they are newer)."""
    if accessed is None or count is None or count < item.access_count:
        return item
    if count != item.access_count or accessed != micros(item.accessed_at):
        item.accessed_at = from_micros(int(accessed))
        item.access_count = int(count)
    return item


def parse_item(raw: str | bytes, accessed: int | None = None, count: int | None = None) -> MemoryItem | None:
    """An item from its stored JSON and the access fields kept beside it; None if unreadable."""
    try:
        item = MemoryItem.model_validate_json(raw)
    except ValueError:
        return None
    return apply_access(item, accessed, count)
