"""Secret redaction, run on every text before it is stored or sent to a provider, and before it
is cut to any length (a key cut in half no longer matches its pattern).

One path for every text: one Aho-Corasick scan (``ahocorasick_rs``) of the lower-cased text finds
every rule keyword (``redact_rules``); a rule whose keywords occur runs, an anchored one only
where its keyword is (``pattern.match`` there), the others over the whole text, as do the few
rules without keywords: a clean text costs the scan and those few passes. Each match names the span of
its secret; overlapping spans merge (the first of their rules in the table names the kind) and
each becomes ``[REDACTED:<kind>]``. The name before a value (``password=``, ``Authorization:
Bearer``) stays, so the reader still sees that something was there and what it was.

Two wrappings are undone before matching: zero-width characters inside the ASCII run of a key are
dropped (the key stays a key with them), and a token cut by a line break (a terminal wrapping a
long line) is matched across the break, both of its parts replaced.
"""

from __future__ import annotations

import operator
import re
from bisect import bisect_right
from collections.abc import Iterator
from itertools import accumulate

import ahocorasick_rs

from .redact_rules import RULES, Rule

PLACEHOLDER = "[REDACTED:{}]"
_PLACEHOLDERS = [PLACEHOLDER.format(rule.kind) for rule in RULES]
_REDACTED = PLACEHOLDER.format("")[:-1]

#: invisible characters between two characters a key is made of (never between letters of other
#: scripts, where a zero-width joiner or non-joiner is spelling)
_ZERO_WIDTH = re.compile(r"(?<=[A-Za-z0-9_+/=.\-])[\u00ad\u200b-\u200d\u2060\ufeff]+(?=[A-Za-z0-9_+/=.\-])")
_INVISIBLE = re.compile(r"[\u00ad\u200b-\u200d\u2060\ufeff]")
#: a token cut by a line break: at most this many of its characters before the break, and after
WRAP_HEAD = 200
WRAP_TAIL = 400
_WRAPPED = re.compile(rf"\S{{1,{WRAP_HEAD}}}(?=\r?\n)")


def _own_keywords(rule: Rule) -> list[str]:
    """The rule's keywords without those that begin with another of them: where the longer one
    occurs, the shorter one does too, at the same place."""
    words = rule.keywords
    return [w for w in words if not any(o != w and w.startswith(o) for o in words)]


def _tables() -> tuple[list[str], list[tuple[int, ...]], list[tuple[int, ...]], tuple[int, ...]]:
    """Every keyword once, and for each the rules tried where it occurs (anchored) and the rules
    it lets scan the whole text; the rules that scan every text."""
    index: dict[str, int] = {}
    anchored: list[list[int]] = []
    scanned: list[list[int]] = []
    for n, rule in enumerate(RULES):
        for word in _own_keywords(rule):
            if word not in index:
                index[word] = len(index)
                anchored.append([])
                scanned.append([])
            (anchored if rule.anchored else scanned)[index[word]].append(n)
    always = tuple(n for n, rule in enumerate(RULES) if not rule.keywords)
    return list(index), [tuple(a) for a in anchored], [tuple(s) for s in scanned], always


KEYWORDS, _ANCHORED, _SCANNED, _ALWAYS = _tables()
_AUTOMATON = ahocorasick_rs.AhoCorasick(KEYWORDS)


def redact(text: str) -> str:
    """Return ``text`` with every recognised secret replaced."""
    if not text:
        return text
    text = _visible(text)
    spans = sorted(_spans(text))
    if not spans:
        return text
    out: list[str] = []
    last = 0
    start, end, rule = spans[0]
    for s, e, n in spans[1:]:
        if s < end:  # overlapping: one placeholder, named by the first rule in the table
            end, rule = max(end, e), min(rule, n)
            continue
        out += [text[last:start], _PLACEHOLDERS[rule]]
        last, (start, end, rule) = end, (s, e, n)
    out += [text[last:start], _PLACEHOLDERS[rule], text[end:]]
    return "".join(out)


def find_secrets(text: str) -> list[str]:
    """Kinds of secrets present in ``text``, in table order."""
    text = _visible(text)
    return list(dict.fromkeys(RULES[n].kind for n in sorted({n for _s, _e, n in _spans(text)})))


def _visible(text: str) -> str:
    """``text`` without the zero-width characters inside a run of key characters."""
    if text.isascii() or _INVISIBLE.search(text) is None:
        return text
    return _ZERO_WIDTH.sub("", text)


def _spans(text: str) -> list[tuple[int, int, int]]:
    """(start, end, rule index) of every secret in ``text``, in no particular order."""
    found: list[tuple[int, int, int]] = []
    scan = set(_ALWAYS)
    wrapped = "\n" in text
    for word, start, crosses in _keywords(text):
        for n in _ANCHORED[word]:
            rule = RULES[n]
            if crosses:  # the keyword itself is cut by the line break
                found += _across_break(rule, n, text, start, alone=False)
                continue
            match = rule.pattern.match(text, start)
            if match is not None:
                span = _secret(rule, match)
                if span is not None:
                    found.append((*span, n))
                    if wrapped and not rule.group and text.startswith(("\n", "\r\n"), span[1]):
                        found += _across_break(rule, n, text, start, alone=True)
            elif wrapped and not rule.group:
                found += _across_break(rule, n, text, start, alone=False)
        scan.update(_SCANNED[word])
    for n in scan:
        rule = RULES[n]
        match = rule.pattern.search(text)
        while match is not None:
            span = _secret(rule, match)
            if span is not None:
                found.append((*span, n))
            match = rule.pattern.search(text, match.end())
    return found


def _lower(text: str) -> str:
    """Lower-cased, one character for one (a few characters lower-case to two)."""
    low = text.lower()
    return low if len(low) == len(text) else text.encode("ascii", "replace").decode().lower()


def _keywords(text: str) -> Iterator[tuple[int, int, bool]]:
    """(keyword, where it begins in ``text``, whether a line break cuts it) for every keyword
    occurrence: found in the text with its line breaks taken out, so that a key cut by a
    terminal's wrap is found too."""
    if "\n" not in text:
        for word, start, _end in _AUTOMATON.find_matches_as_indexes(_lower(text), overlapping=True):
            yield word, start, False
        return
    lines = text.splitlines()
    ends = list(accumulate(map(len, lines)))  # where each line ends in the joined text
    breaks = map(operator.sub, map(len, text.splitlines(keepends=True)), map(len, lines))
    shift = [0, *accumulate(breaks)]  # the break characters taken out before each line
    for word, start, end in _AUTOMATON.find_matches_as_indexes(_lower("".join(lines)), overlapping=True):
        line = bisect_right(ends, start)
        yield word, start + shift[line], end > ends[line]


def _secret(rule: Rule, match: re.Match[str]) -> tuple[int, int] | None:
    """The span to replace, unless the match fails its rule's check or is a placeholder already."""
    start, end = match.span(rule.group)
    if start == end or match.string.startswith(_REDACTED, start):
        return None
    if rule.check is not None and not rule.check(match):
        return None
    return start, end


def _across_break(rule: Rule, n: int, text: str, start: int, *, alone: bool) -> list[tuple[int, int, int]]:
    """A token cut by the line break that follows its start (a terminal's wrap), matched with
    the break taken out: both parts are replaced, the break stays. When its first part was a
    match ``alone``, the next line is its rest only if that looks like the rest of a key: eight
    characters or more, a digit among them, and nothing else up to a space (``TOKEN=...`` then
    ``npm start`` is two lines)."""
    head = _WRAPPED.match(text, start)
    if head is None:
        return []
    cut = head.end()
    after = cut + (2 if text.startswith("\r\n", cut) else 1)
    before = text[start - 1 : start]  # for the rule's look-behind
    joined = before + text[start:cut] + text[after : after + WRAP_TAIL]
    match = rule.pattern.match(joined, len(before))
    joined_cut = len(before) + cut - start
    if match is None or match.end() <= joined_cut or _secret(rule, match) is None:
        return []
    tail = after + match.end() - joined_cut
    if alone and not (
        tail - after >= 8
        and any(c.isdigit() for c in text[after:tail])
        and (tail == len(text) or text[tail].isspace())
    ):
        return []
    return [(start, cut, n), (after, tail, n)]
