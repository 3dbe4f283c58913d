"""Access bookkeeping (``accessed_at``, ``access_count``) kept off the query hot path.

A query touches the items it returns; writing that at once would put a write transaction (and,
on SQLite, the file's write lock) on every read. Instead each store buffers touches in this
process and writes them in one batch: about ``DELAY`` seconds after the first one, before the
store's next memory write, and when the store closes. Reads from this process see the buffered
values at once (``overlay``); other processes see them after the flush. A crash loses at most
the last second of access bookkeeping, never an item or its content.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable
from datetime import UTC, datetime, timedelta

from ..memory.model import MemoryItem

log = logging.getLogger(__name__)

DELAY = 1.0
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


#: ``write(session_id, items)``: store the access fields (and rank keys) of ``items``
Writer = Callable[[str, list[MemoryItem]], None]


class TouchBuffer:
    def __init__(self, write: Writer, delay: float = DELAY) -> None:
        self._write = write
        self._delay = delay
        self._pending: dict[str, dict[str, MemoryItem]] = {}
        self._lock = threading.Lock()
        self._flush_lock = threading.Lock()
        self._timer: threading.Timer | None = None

    def add(self, session_id: str, items: list[MemoryItem]) -> None:
        with self._lock:
            self._pending.setdefault(session_id, {}).update((i.id, i) for i in items)
            if self._timer is None:
                self._timer = threading.Timer(self._delay, self._flush_in_background)
                self._timer.daemon = True
                self._timer.start()

    def overlay(self, session_id: str, items: Iterable[MemoryItem]) -> None:
        """Give ``items`` (read from the store) the access fields buffered for them."""
        pending = self._pending.get(session_id)
        if not pending:
            return
        for item in items:
            touched = pending.get(item.id)
            if touched is not None and touched.access_count >= item.access_count:
                item.accessed_at = touched.accessed_at
                item.access_count = touched.access_count

    def forget(self, session_id: str, ids: Iterable[str]) -> None:
        with self._lock:
            pending = self._pending.get(session_id)
            for item_id in ids if pending else ():
                pending.pop(item_id, None)  # type: ignore[union-attr]

    def pending(self) -> dict[str, list[MemoryItem]]:
        """A snapshot of the buffered touches, to write inside the caller's own write transaction
        (one transaction per store, not a flush first); ``written`` once it committed. Entries
        stay visible to ``overlay`` (and to the background flush, which rewrites them harmlessly:
        the write keeps the larger values) until then."""
        with self._lock:
            return {sid: list(items.values()) for sid, items in self._pending.items() if items}

    def written(self, snapshot: dict[str, list[MemoryItem]]) -> None:
        """Drop the entries of ``snapshot`` (now stored) unless touched again meanwhile."""
        with self._lock:
            for session_id, items in snapshot.items():
                pending = self._pending.get(session_id, {})
                for item in items:
                    if pending.get(item.id) is item:
                        del pending[item.id]
                if not pending:
                    self._pending.pop(session_id, None)

    def flush(self) -> None:
        """Write every buffered touch now. Entries stay visible to ``overlay`` until written."""
        with self._flush_lock:
            with self._lock:
                if self._timer is not None:
                    self._timer.cancel()
                    self._timer = None
            snapshot = self.pending()
            for session_id, items in snapshot.items():
                self._write(session_id, items)
            self.written(snapshot)

    def _flush_in_background(self) -> None:
        try:
            self.flush()
        except Exception:  # the store went away: access bookkeeping is best effort
            log.warning("could not store access times of working-memory items", exc_info=True)
