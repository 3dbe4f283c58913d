"""Why a JSON-RPC message cannot be taken, in words naming the field and the fix, for the two
stdio servers' guards (``mcp/guard.py``, ``lsp/frames.py``: messages their SDK leaves unanswered)
and the language server's own params.

Python's JSON parser takes what the SDKs' parsers refuse (lone surrogates, big integers), so
``parse_problem`` can say where the problem is. The limits hold for every request:

* nesting at most ``MAX_DEPTH`` levels (no argument of ours is nested more than a few);
* strings are valid Unicode (no lone UTF-16 surrogate: it cannot be stored or sent on);
* numbers are finite (``Infinity``/``NaN`` are not JSON) and integers fit in 64 bits;
* the request ``id`` is at most ``MAX_ID_CHARS`` characters.

``request_id`` finds a request's ``id`` even in text that does not parse, so the error can be
matched to its request. Only the standard library.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any

MAX_DEPTH = 64
MAX_ID_CHARS = 256
INT_LIMIT = 2**63  # SQLite, Redis and most JSON parsers stop at signed 64 bits

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
INVALID_PARAMS = -32602


@dataclass(frozen=True)
class Problem:
    """Why a message is refused: the JSON-RPC ``code`` and a message naming the field and the fix."""

    code: int
    message: str


def _path(parts: list[str | int]) -> str:
    out = ""
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "message"


def _lone_surrogate(text: str) -> int | None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return exc.start
    return None


_NAMES = {"inf": "Infinity", "-inf": "-Infinity", "nan": "NaN"}


def check_value(value: Any, max_depth: int = MAX_DEPTH) -> Problem | None:
    """The first thing in a parsed message that no request of ours may carry (None if fine).
    Iterative, so a deep value cannot exhaust the stack here."""
    stack: list[tuple[Any, list[str | int]]] = [(value, [])]
    while stack:
        item, where = stack.pop()
        if len(where) > max_depth:
            return Problem(
                INVALID_REQUEST,
                f"{_path(where[:3])}...: nested deeper than {max_depth} levels. "
                "Fix: send flat arguments (no request here nests more than a few levels)",
            )
        if isinstance(item, str):
            at = _lone_surrogate(item)
            if at is not None:
                return Problem(
                    INVALID_PARAMS,
                    f"{_path(where)}: contains a lone UTF-16 surrogate "
                    f"(\\u{ord(item[at]):04x} at character {at}, e.g. a cut emoji). "
                    "Fix: send the whole surrogate pair or remove the character",
                )
        elif isinstance(item, bool) or item is None:
            continue
        elif isinstance(item, int):
            if not -INT_LIMIT <= item < INT_LIMIT:
                return Problem(
                    INVALID_PARAMS,
                    f"{_path(where)}: integer {str(item)[:30]}{'...' if len(str(item)) > 30 else ''} "
                    "is outside 64 bits. Fix: pass an integer between -2^63 and 2^63-1 "
                    "(each argument's own bounds are in the tool or request schema)",
                )
        elif isinstance(item, float):
            if not math.isfinite(item):
                return Problem(
                    INVALID_PARAMS,
                    f"{_path(where)}: {_NAMES.get(repr(item), item)} is not a JSON number "
                    "(Infinity and NaN are not JSON). "
                    "Fix: pass a finite number",
                )
        elif isinstance(item, dict):
            for key, child in item.items():
                if isinstance(key, str) and _lone_surrogate(key) is not None:
                    return Problem(
                        INVALID_PARAMS,
                        f"{_path(where)}: a key contains a lone UTF-16 surrogate. Fix: use plain key names",
                    )
                stack.append((child, [*where, str(key)]))
        elif isinstance(item, list):
            stack.extend((child, [*where, n]) for n, child in enumerate(item))
    return None


def check_message(message: Any) -> Problem | None:
    """``check_value`` plus the request id's size."""
    if isinstance(message, dict):
        msg_id = message.get("id")
        if isinstance(msg_id, str) and len(msg_id) > MAX_ID_CHARS:
            return Problem(
                INVALID_REQUEST,
                f"id: is {len(msg_id):,} characters, over the limit of {MAX_ID_CHARS}. "
                "Fix: use a short request id (a counter or a uuid)",
            )
    return check_value(message)


_ID_VALUE = re.compile(r'\s*:\s*(-?\d{1,19}(?![\d.eE])|"(?:[^"\\]|\\.){0,256}")')


def request_id(text: str) -> int | str | None:
    """The top-level ``"id"`` of a JSON-RPC message, read without parsing the whole text (which
    may be too deep or broken): a scan that tracks strings and nesting. None if not found."""
    depth, i = 0, 0
    while (hit := _SPECIAL.search(text, i)) is not None:
        ch, i = hit.group(), hit.start()
        if ch == '"':
            end = _string_end(text, i + 1)
            if depth == 1 and text[i + 1 : end] == "id":
                match = _ID_VALUE.match(text, end + 1)
                if match is None:
                    return None
                try:
                    found = json.loads(match.group(1))
                except ValueError:
                    return None
                return found if isinstance(found, (int, str)) else None
            i = end + 1
            continue
        depth += 1 if ch in "{[" else -1
        i += 1
    return None


_SPECIAL = re.compile(r'["{}\[\]]')


def _string_end(text: str, start: int) -> int:
    """The index of the quote closing a string that starts at ``start`` (len(text) if none)."""
    at = start
    while (at := text.find('"', at)) != -1:
        slashes = 0
        while text[at - 1 - slashes] == "\\":
            slashes += 1
        if slashes % 2 == 0:
            return at
        at += 1
    return len(text)


def parse_problem(text: str) -> Problem:
    """Why ``text`` is not a message an SDK could take, from Python's own parser (which takes
    lone surrogates and big integers, so the reason can name the field)."""
    try:
        parsed = json.loads(text)
    except RecursionError:
        return Problem(
            INVALID_REQUEST,
            f"message: nested deeper than {MAX_DEPTH} levels. Fix: send flat arguments",
        )
    except ValueError as exc:
        reason = getattr(exc, "msg", str(exc))
        at = getattr(exc, "pos", None)
        where = f" at character {at:,}" if at is not None else ""
        return Problem(PARSE_ERROR, f"message: not valid JSON ({reason}{where}). Fix: send one JSON object")
    found = check_message(parsed)
    if found is not None:
        return found
    if not isinstance(parsed, dict):
        return Problem(INVALID_REQUEST, "message: must be a JSON object. Fix: send one JSON-RPC object")
    return Problem(
        INVALID_REQUEST,
        "message: not a valid JSON-RPC 2.0 message. "
        'Fix: send {"jsonrpc": "2.0", "id": 1, "method": "...", "params": {...}}',
    )
