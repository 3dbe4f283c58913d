"""Stores: the embedded SQLite default and (selected by URL) Redis / Valkey / Redis Cluster.

The contract is four small parts (parts.py: state, change feed, observations, memory index) that
each backend implements and a ``Store`` (store.py) holds. ``open_store(settings)`` is
the only place a backend is chosen.
"""

from __future__ import annotations

from pathlib import Path

from ..config import Settings
from ..errors import ConfigError
from .parts import (
    Change,
    ChangeCallback,
    ChangeFeed,
    IndexedItem,
    IndexTerms,
    MemoryIndex,
    ObservationStore,
    StateStore,
    Subscription,
    UpdateFn,
    UpdateOutcome,
)
from .store import Store

__all__ = [
    "Change",
    "ChangeCallback",
    "ChangeFeed",
    "IndexTerms",
    "IndexedItem",
    "MemoryIndex",
    "ObservationStore",
    "StateStore",
    "Store",
    "Subscription",
    "UpdateFn",
    "UpdateOutcome",
    "default_sqlite_path",
    "open_store",
]


def default_sqlite_path(settings: Settings) -> Path:
    return settings.resolved_data_dir() / "brain.db"


def sqlite_path_from_url(url: str) -> Path:
    """``sqlite:///abs/path.db`` (or ``sqlite:////abs/path.db``) -> /abs/path.db;
    ``sqlite://relative.db`` -> relative to the working directory; ``~`` is expanded."""
    rest = url.split("://", 1)[1]
    if not rest:
        raise ConfigError("the sqlite URL has no path", fix="use sqlite:///absolute/path/brain.db")
    if rest.startswith("/"):
        rest = "/" + rest.lstrip("/")
    return Path(rest).expanduser()


def open_store(settings: Settings) -> Store:
    url = settings.store_url
    if url is None or url.startswith("sqlite:"):
        from .sqlite import SQLiteStore

        path = default_sqlite_path(settings) if url is None else sqlite_path_from_url(url)
        return SQLiteStore(path, history_size=settings.history_size, cas_attempts=settings.cas_attempts)
    from .redis import RedisStore

    return RedisStore(
        url,
        prefix=settings.redis_prefix,
        cluster=settings.redis_cluster,
        history_size=settings.history_size,
        cas_attempts=settings.cas_attempts,
    )
