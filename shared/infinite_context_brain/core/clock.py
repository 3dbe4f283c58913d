"""The one clock of the core (timezone-aware UTC), importable by any model module."""

from __future__ import annotations

from datetime import UTC, datetime


def utcnow() -> datetime:
    return datetime.now(UTC)


def shown_time(moment: datetime | None) -> str:
    """A stored time as every surface shows it: ``2026-01-01 10:00 UTC`` (``never`` for none)."""
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC") if moment else "never"
