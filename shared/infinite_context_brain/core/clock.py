"""The one clock of the core (timezone-aware UTC), importable by any model module."""

from __future__ import annotations

from datetime import UTC, datetime


def utcnow() -> datetime:
    return datetime.now(UTC)
