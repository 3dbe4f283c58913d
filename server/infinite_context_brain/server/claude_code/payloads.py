"""Claude Code's hook input as a handler can use it: parsed once, and made safe for every
serializer after it.

A tool's output may end in half an emoji (a JavaScript slice leaves a lone surrogate, which JSON
carries as ``\\ud83d``) or hold integers past 64 bits; the standard library reads both, but
orjson, SQLite and Redis clients refuse them. So lone surrogates become U+FFFD, integers
outside 64 bits become their decimal text, and what is nested deeper than ``MAX_DEPTH`` (orjson
writes at most 255 levels) becomes its JSON text, before any handler sees the payload. Input
nested deeper than the parser goes is refused with a message, never a traceback.

Standard library only: the launcher checks each deferred hook's payload with it.
"""

from __future__ import annotations

import json

#: ``typing.TYPE_CHECKING`` without importing ``typing`` (this module is on every hook's path)
TYPE_CHECKING = False

if TYPE_CHECKING:
    from typing import Any

#: integers in this range pass every serializer on the way to the store (orjson: i64 and u64)
_INT_MIN, _INT_MAX = -(2**63), 2**64 - 1
_REPLACEMENT = "\ufffd"
#: levels kept as structure; anything deeper is kept as its JSON text
MAX_DEPTH = 64


class PayloadError(ValueError):
    """The hook input is not a JSON object a handler can use (the message says why)."""


def parse(raw: bytes, *, cleaned: bool = True) -> dict[str, Any]:
    """The hook's JSON object from ``raw`` (stdin), cleaned (``clean``) unless only checked
    (``cleaned`` False: a queued payload is cleaned when it is run)."""
    text = raw.decode("utf-8", "replace")
    if not text.strip():
        raise PayloadError("stdin is empty; expected Claude Code's JSON object")
    try:
        value = json.loads(text)
    except RecursionError:
        raise PayloadError("stdin JSON is nested too deeply to read; nothing done") from None
    except ValueError as exc:
        raise PayloadError(f"stdin is not JSON ({exc}); nothing done") from None
    if not isinstance(value, dict):
        raise PayloadError("expected a JSON object on stdin from Claude Code; nothing done")
    return clean(value) if cleaned else value


def _text(value: str) -> str:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return "".join(_REPLACEMENT if "\ud800" <= c <= "\udfff" else c for c in value)
    return value


def _scalar(value: Any) -> Any:
    if isinstance(value, str):
        return _text(value)
    if isinstance(value, int) and not isinstance(value, bool) and not _INT_MIN <= value <= _INT_MAX:
        return str(value)
    return value


def clean(value: Any) -> Any:
    """``value`` with lone surrogates replaced, out-of-range integers as text and what is nested
    deeper than ``MAX_DEPTH`` as JSON text (without recursion: the input may be as deep as the
    parser allowed)."""
    if not isinstance(value, dict | list):
        return _scalar(value)
    root: dict[str, Any] | list[Any] = {} if isinstance(value, dict) else []
    stack: list[tuple[dict[str, Any] | list[Any], dict[str, Any] | list[Any], int]] = [(value, root, 1)]
    while stack:
        source, target, depth = stack.pop()
        items = source.items() if isinstance(source, dict) else enumerate(source)
        for key, item in items:
            if isinstance(item, dict | list) and depth >= MAX_DEPTH:
                item = json.dumps(item)  # ASCII: surrogates escaped, any integer as digits
            elif isinstance(item, dict | list):
                copy: dict[str, Any] | list[Any] = {} if isinstance(item, dict) else []
                stack.append((item, copy, depth + 1))
                item = copy
            else:
                item = _scalar(item)
            if isinstance(target, dict):
                target[_text(str(key))] = item
            else:
                target.append(item)
    return root
