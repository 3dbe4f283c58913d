"""JSON-lines logging to stderr (stdout belongs to the MCP / LSP protocols and hook output)."""

from __future__ import annotations

import logging
import sys
from datetime import UTC, datetime

_RESERVED = set(vars(logging.makeLogRecord({})))
#: what a line says when it cannot be redacted yet: nothing of it is written unredacted
HELD_BACK = "(line held back: its redaction was still loading)"
#: Where the log level is set, in order; ``Settings.log_level`` reads the same names.
LOG_LEVEL_VARIABLES = ("INFINITE_CONTEXT_LOG_LEVEL", "LOG_LEVEL")


class JsonLineFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        import orjson

        head: dict[str, object] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
        }
        try:
            from .redact import redact  # a provider's error may echo a key; logs are kept
        except ImportError:  # this very thread is loading it: a signal handler's line (stopping.py)
            return orjson.dumps({**head, "msg": HELD_BACK}).decode()
        payload: dict[str, object] = {**head, "msg": redact(record.getMessage())}
        # Anything passed with extra={...} becomes a field of its own.
        for key, value in vars(record).items():
            if key not in _RESERVED and key not in payload:
                payload[key] = redact(value) if isinstance(value, str) else value
        if record.exc_info:
            payload["exc"] = redact(self.formatException(record.exc_info))
        # Fields are redacted as text (line starts, quotes intact), the line once more as JSON.
        return redact(orjson.dumps(payload, default=str).decode())


def level_from_env() -> str:
    """The log level from the environment, without loading Settings: entry points log from their
    first line, before (or without) any settings, and must not pay for pydantic-settings to do so.

    The one environment read outside ``Settings`` (documented in ``config``): it reads exactly
    ``LOG_LEVEL_VARIABLES``, the names ``Settings.log_level`` reads, and an entry point that loads
    Settings calls ``setup_logging(settings.log_level)`` again (so ``.env`` takes effect too).
    """
    import os

    return next((os.environ[name] for name in LOG_LEVEL_VARIABLES if os.environ.get(name)), "INFO")


def setup_logging(level: str = "INFO") -> None:
    """Route every logger to stderr as JSON lines; idempotent."""
    root = logging.getLogger()
    previous = [h for h in root.handlers if getattr(h, "_infinite_context_brain", False)]
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonLineFormatter())
    handler._infinite_context_brain = True  # type: ignore[attr-defined]
    # Added before the old one goes: the root logger never has no handler, which another thread
    # (the MCP warm-up loads settings while the server starts) could take for "unconfigured".
    root.addHandler(handler)
    for old in previous:
        root.removeHandler(old)
    root.setLevel(level.upper())
    # Libraries that are chatty at INFO (the MCP SDK logs every request) stay at WARNING unless
    # the user asked for DEBUG.
    if level.upper() != "DEBUG":
        for name in ("mcp", "httpx", "httpx2", "pygls"):
            logging.getLogger(name).setLevel(logging.WARNING)
