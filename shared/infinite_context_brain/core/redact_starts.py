"""What every match of a redaction rule begins with, read from the rule's regex source.

``redact`` tries a rule only where one of these literal starts occurs (``str.find`` is a C
scan; the regex engine tries a pattern that does not begin with a single literal at every
position, which made the generic ``name = value`` rule cost ~60 µs on a 500-character note), so
a clean text costs a few substring scans instead of ~90 regex passes.

The reader is deliberately small: it follows literal characters, escaped punctuation, ``\\b`` and
lookarounds (zero-width: skipped), groups and top-level branches, classes of single characters
(``[?&;]``) and optional pieces (``(?:proxy-)?``), and stops at anything else. What it returns is
only ever a prefix of what the pattern must match; when it cannot tell, it returns None and the
rule runs everywhere, as before. ``tests/core/test_redaction_fast.py`` checks every start against
the regex parser's own view of each pattern, and the fast path against the full rules.
"""

from __future__ import annotations

import re

#: characters that stand for themselves outside a class (no rule is written VERBOSE)
_PLAIN = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-~:/@=%!,;'\"`<>#& ")
_ZERO_WIDTH = ("(?=", "(?!", "(?<=", "(?<!")
#: more starts than this are not worth a scan each
MAX_STARTS = 48
#: past MAX_STARTS, a piece's texts are cut to this many characters (still prefixes) and the
#: reading stops there; past MANY starts, all are cut so
SHORT = 3
MANY = 12


class _Stop(Exception):
    """The reader met something it does not follow."""


def starts(pattern: re.Pattern[str]) -> tuple[str, ...] | None:
    """Literal texts one of which every match of ``pattern`` begins with (lower-case when the
    pattern ignores case), or None when they cannot be read."""
    source = pattern.pattern
    try:
        found, end, _ = _branches(source, 4 if source.startswith("(?i)") else 0)
    except (_Stop, IndexError, ValueError):
        return None
    if end != len(source) or not found or "" in found:
        return None
    if pattern.flags & re.IGNORECASE:
        found = {s.lower() for s in found}
    if len(found) > MANY:  # one scan each: fewer, shorter ones find the same places and more
        found = {s[:SHORT] for s in found}
    # a start that begins with another one is found where that one is: one scan is enough
    return tuple(sorted(s for s in found if not any(s != t and s.startswith(t) for t in found)))


def _branches(src: str, i: int) -> tuple[set[str], int, bool]:
    """The prefixes of the branches from ``i`` up to the ``)`` (or end) that closes them: (their
    union, the index of that ``)`` or end, whether the reader followed every branch whole)."""
    found: set[str] = set()
    whole = True
    while True:
        prefixes, i, complete = _sequence(src, i)
        found |= prefixes
        whole &= complete
        if i >= len(src) or src[i] != "|":
            break
        i += 1
    if len(found) > MAX_STARTS:
        raise _Stop
    return found, i, whole


def _sequence(src: str, i: int) -> tuple[set[str], int, bool]:
    """The prefixes of the branch that begins at ``i``: (prefixes, index of the ``|`` or ``)``
    or end that closes the branch, whether the reader followed the whole branch)."""
    prefixes = {""}
    while i < len(src) and src[i] not in "|)":
        try:
            atom, j, whole = _atom(src, i)
        except _Stop:
            return prefixes, _branch_end(src, i), False
        if atom is None:  # zero-width
            i = j
            continue
        quantifier = src[j] if j < len(src) else ""
        if quantifier == "?" and whole:  # optional: with or without it
            atom = atom | {""}
            j += 2 if src[j + 1 : j + 2] in ("?", "+") else 1  # lazy / possessive
        elif quantifier in ("?", "*") or src.startswith(("{0", "{,"), j):
            return prefixes, _branch_end(src, i), False
        elif quantifier in ("+", "{"):  # at least once: that much, then stop
            whole = False
        joined = {p + a for p in prefixes for a in atom}
        if len(joined) > MAX_STARTS:
            joined = {p + a[:SHORT] for p in prefixes for a in atom}
            if len(joined) > MAX_STARTS:
                return prefixes, _branch_end(src, i), False
            whole = False
        prefixes = joined
        if not whole:
            return prefixes, _branch_end(src, i), False
        i = j
    return prefixes, i, True


def _atom(src: str, i: int) -> tuple[set[str] | None, int, bool]:
    """The piece at ``i``: (the texts it begins with, None when zero-width; the index after it;
    whether those texts are all it matches)."""
    c = src[i]
    if c == "\\":
        escaped = src[i + 1]
        if escaped == "b":
            return None, i + 2, True
        if escaped.isalnum():
            raise _Stop
        return {escaped}, i + 2, True
    if c == "[":
        return _class(src, i)
    if c == "(":
        if src.startswith(_ZERO_WIDTH, i):
            return None, _group_end(src, i), True
        if src.startswith("(?:", i):
            j = i + 3
        elif src.startswith("(?", i):  # flags, named groups: not followed
            raise _Stop
        else:
            j = i + 1
        found, end, whole = _branches(src, j)
        if src[end] != ")":
            raise _Stop
        return found, end + 1, whole
    if c in _PLAIN:
        return {c}, i + 1, True
    raise _Stop


def _class(src: str, i: int) -> tuple[set[str], int, bool]:
    """A class of single characters (``[?&;]``, ``[_\\-.]``); ranges, negation and
    categories are not followed."""
    chars: set[str] = set()
    j = i + 1
    while src[j] != "]":
        c = src[j]
        if c == "\\":
            if src[j + 1].isalnum():
                raise _Stop
            chars.add(src[j + 1])
            j += 2
            continue
        if c in "-^[" or (c == "]" and j == i + 1):
            raise _Stop
        chars.add(c)
        j += 1
    if not chars:
        raise _Stop
    return chars, j + 1, True


def _class_end(src: str, i: int) -> int:
    """The index after the class ``[...]`` that opens at ``i``."""
    j = i + 1
    if src[j] == "^":
        j += 1
    if src[j] == "]":
        j += 1
    while src[j] != "]":
        j += 2 if src[j] == "\\" else 1
    return j + 1


def _branch_end(src: str, i: int) -> int:
    """The index of the ``|`` or ``)`` that closes the branch ``i`` is in (or the end)."""
    depth = 0
    while i < len(src):
        c = src[i]
        if c == "\\":
            i += 2
            continue
        if c == "[":
            i = _class_end(src, i)
            continue
        if c == "(":
            depth += 1
        elif c == ")":
            if depth == 0:
                return i
            depth -= 1
        elif c == "|" and depth == 0:
            return i
        i += 1
    return i


def _group_end(src: str, i: int) -> int:
    """The index after the group that opens at ``i``."""
    return _branch_end(src, i + 1) + 1
