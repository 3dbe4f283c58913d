"""Secret redaction, run on every text before it is stored or sent to a provider, and before it
is cut to any length (a key cut in half no longer matches its pattern).

The rules (``redact_rules``) are gitleaks' and detect-secrets' formats, ported: provider tokens
by prefix, private-key blocks (also cut off, or only their tail), credentials in headers,
command flags and URLs, ``name = value`` lines whose name says secret, and quoted high-entropy
strings. A redacted value becomes ``[REDACTED:<kind>]`` so the reader still sees that something
was there and what it was; the name before it (``password=``, ``Authorization: Bearer``) stays.

Cost: a rule runs only when one of its keywords occurs in the text (one lower-cased copy, one
substring scan per keyword), so a megabyte of tool output takes tens of milliseconds; the
PostToolUse hook redacts every result it stores. Every memory item is redacted too, so a clean
note must cost little (issue 19: ~150 µs for 500 characters was a third of a ``store``): a
provider token's rule runs only when the text has a long enough word holding one of its literal
starts (``redact_starts``), and a rule over keyword lines is tried only at the places one of
its starts occurs, and before the text's last ``=`` or ``:`` when every match holds one
(``Rule.assigns``: a note full of words such as ``token`` with one ``Error:`` up front took
~50 µs of rules over keyword lines). All are exact: a rule is skipped only where it cannot
match, so the result is the same as running every rule (``tests/core/test_redaction_fast.py``
compares the two). The steps a text needs are chosen once per (keywords present, long-word
rules admitted): notes repeat a few such pairs.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from .redact_rules import RULES, WORD_MIN_CHARS, Rule, pem_body
from .redact_starts import starts

PLACEHOLDER = "[REDACTED:{}]"
_PEM_END = re.compile(r"-----END[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----")
#: a line of a key block: base64, or a header of an encrypted PEM (Proc-Type, DEK-Info)
#: full-width (64-character) base64 lines of a key body, cut off from both its marker lines; the
#: pattern starts with a newline (a literal: fast), so ``redact`` gives the text a leading one
# Full-width base64 lines of a key body: two or more, or a single one (a summary or tag cut after
# ``tail key.pem`` keeps one line, with or without its newline; ``pem_body`` then asks more of it).
_PEM_BODY = re.compile(r"\n((?:[A-Za-z0-9+/]{64}(?:\r?\n|\Z))+(?:[A-Za-z0-9+/=]{1,64}(?=\r?\n|\Z))?)")
_PEM_LINE = re.compile(r"[ \t]*(?:[A-Za-z0-9+/=]{8,}|[A-Za-z-]+:[^\n]*)?[ \t]*\r?")


def _replacer(rule: Rule) -> Callable[[re.Match[str]], str]:
    placeholder = PLACEHOLDER.format(rule.kind)

    def replace(match: re.Match[str]) -> str:
        if rule.word_start and match.start() > 0:
            before = match.string[match.start() - 1]
            if before.isalnum() or before in "_-":
                return match.group(0)
        if rule.check is not None and not rule.check(match):
            return match.group(0)
        if not rule.group:
            return placeholder
        whole, start = match.group(0), match.start(0)
        return whole[: match.start(rule.group) - start] + placeholder + whole[match.end(rule.group) - start :]

    return replace


def _shortest(texts: tuple[str, ...]) -> tuple[str, ...]:
    """``texts`` without those that hold another one: where one is, the shorter one is too."""
    return tuple(t for t in texts if not any(o != t and o in t for o in texts))


@dataclass(frozen=True)
class _Step:
    """A rule as ``redact`` runs it: its place in the table, and what gates it."""

    order: int
    rule: Rule
    replace: Callable[[re.Match[str]], str]
    keywords: tuple[str, ...] | None
    #: every match begins with one of these (``redact_starts``); None: unknown
    found: tuple[str, ...] | None
    folded: bool  # the pattern ignores case (an enum operation: not once a call)
    #: ``Rule.needs`` without those holding another one (``PASSWORD`` holds ``PASS``)
    needs: tuple[str, ...] | None
    assigns: tuple[str, ...] | None  # ``Rule.assigns``


_STEPS = [
    _Step(
        n,
        rule,
        _replacer(rule),
        rule.keywords,
        starts(rule.pattern),
        bool(rule.pattern.flags & re.IGNORECASE),
        None if rule.needs is None else _shortest(rule.needs),
        rule.assigns,
    )
    for n, rule in enumerate(RULES)
]
#: the steps a text without a WORD_MIN_CHARS word needs (most notes): no ``within_word`` rule
_SHORT = [step for step in _STEPS if not step.rule.within_word]
_WORD_STEPS = [s for s in _STEPS if s.rule.within_word]
#: every keyword of a rule over keyword lines, each looked for once a text
_KEYWORDS = sorted({k for s in _STEPS for k in s.keywords or ()})
#: ``within_word`` steps tried on every text with a long word: starts unknown, ignoring case, or
#: of a single character (a quote: JSON is full of them, a scan finds nothing to rule out)
_UNGATED = frozenset(
    s.order for s in _WORD_STEPS if s.found is None or s.folded or min(map(len, s.found)) < 2
)
#: the gates pay on a note, not on a tool output: past this many characters every rule runs
#: over its keyword lines as one regex pass (C: faster than trying many places one by one), and
#: past WORDS_MAX characters of long words every provider-token rule runs (one scan each, as
#: fast as looking for its starts)
GATED_MAX = 8_000
WORDS_MAX = 80
#: more places than this for one rule in one segment: one regex pass instead
PLACES_MAX = 24
#: a keyword rule with at most this many starts is skipped when none occurs in the text (a
#: scan each), before its keyword lines are found (``password-flag``: a ``-``)
FEW_STARTS = 3
_WORD_STARTS = sorted(
    {start for s in _WORD_STEPS if s.order not in _UNGATED for start in s.found or ()},
    key=lambda start: (-len(start), start),
)
#: one scan for all of them: at a place where several starts occur, the longest is reported
#: (longest first), and the others are its prefixes: ``_ADMITS`` maps it to all their steps
_WORD_START = re.compile("|".join(map(re.escape, _WORD_STARTS)))
_ADMITS = {
    found: frozenset(
        s.order
        for s in _WORD_STEPS
        if s.order not in _UNGATED and any(found.startswith(t) for t in s.found or ())
    )
    for found in _WORD_STARTS
}


#: the steps ``_View`` chose for (the ``within_word`` steps admitted, None: all; the keywords
#: present), kept: notes repeat their few pairs, and choosing took ~45 set tests and a sort
_CHOSEN: dict[tuple[frozenset[int] | None, frozenset[str]], list[_Step]] = {}
CHOSEN_MAX = 1_024


def _chosen(admitted: frozenset[int] | None, keywords: frozenset[str]) -> list[_Step]:
    key = (admitted, keywords)
    chosen = _CHOSEN.get(key)
    if chosen is None:
        steps = _STEPS if admitted is None else _SHORT
        if admitted:
            steps = sorted(_SHORT + [_STEPS[n] for n in admitted], key=lambda s: s.order)
        chosen = [s for s in steps if s.keywords is None or not keywords.isdisjoint(s.keywords)]
        if len(_CHOSEN) >= CHOSEN_MAX:
            _CHOSEN.clear()
        _CHOSEN[key] = chosen
    return chosen


class _View:
    """What the gates read of the current text, made once per version of it (a rule that
    replaces something makes a new one)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self._low: str | None = None
        self._last: dict[tuple[str, ...], int] = {}
        #: try a rule only at the places one of its starts occurs (a short text)
        self.anchored = len(text) <= GATED_MAX
        if not self.anchored:  # every rule, each over its keyword lines, as one regex pass
            self.steps = _STEPS
            return
        low = self.low  # (read once: the property, called for each keyword, cost ~10 µs a note)
        keywords = frozenset(k for k in _KEYWORDS if k in low)
        #: the text's words of at least WORD_MIN_CHARS characters ("" when none: most notes)
        words = " ".join(w for w in text.split() if len(w) >= WORD_MIN_CHARS)
        admitted: frozenset[int] | None = frozenset()
        if len(words) > WORDS_MAX:
            admitted = None
        elif words:
            found = set(_UNGATED)
            match = _WORD_START.search(words)
            while match is not None:
                found |= _ADMITS[match.group()]
                match = _WORD_START.search(words, match.start() + 1)
            admitted = frozenset(found)
        #: the steps worth trying, in table order: no keyword rule none of whose keywords occurs
        self.steps = _chosen(admitted, keywords)

    @property
    def low(self) -> str:
        """Lower-cased, one character a code point (the others as ``?``), so offsets agree."""
        if self._low is None:
            text = self.text
            self._low = text.lower() if text.isascii() else text.encode("ascii", "replace").lower().decode()
        return self._low

    def last(self, chars: tuple[str, ...]) -> int:
        """Where the last of ``chars`` is in the text (-1: none is): a match of a rule whose
        every match holds one of them (``Rule.assigns``) begins at or before it."""
        found = self._last.get(chars)
        if found is None:
            found = self._last[chars] = max(self.text.rfind(c) for c in chars)
        return found


def _occurs(found: tuple[str, ...], text: str, folded: bool) -> bool:
    if folded:  # ``(?i)`` also matches a few non-ASCII letters (K for k): only ASCII is certain
        if not text.isascii():
            return True
        text = text.lower()
    return any(s in text for s in found)


def _sub_at(
    pattern: re.Pattern[str],
    replace: Callable[[re.Match[str]], str],
    segment: str,
    found: tuple[str, ...],
    folded: bool,
    end: int | None = None,
) -> str:
    """``pattern.sub(replace, segment)``, trying the pattern only where one of its starts
    occurs: every match begins at one, so the matches (leftmost first, none overlapping) are
    the ones ``sub`` finds. With ``end``, only the starts that end by it are looked for (no
    match begins after the last ``Rule.assigns`` character: ``_step`` adds the longest start)."""
    hay = segment
    if folded:
        if not segment.isascii():  # ``(?i)`` matches a few non-ASCII letters: the full scan
            return pattern.sub(replace, segment)
        hay = segment.lower()
    places: set[int] = set()
    end = len(hay) if end is None else end
    for start in found:
        at = hay.find(start, 0, end)
        while at != -1:
            places.add(at)
            at = hay.find(start, at + 1, end)
        if len(places) > PLACES_MAX:
            return pattern.sub(replace, segment)
    parts: list[str] = []
    last = 0
    for at in sorted(places):
        if at < last:  # inside the previous match
            continue
        match = pattern.match(segment, at)
        if match is not None:
            parts += [segment[last:at], replace(match)]
            last = match.end()
    if not parts:
        return segment
    parts.append(segment[last:])
    return "".join(parts)


def _keyword_lines(low: str, keywords: tuple[str, ...]) -> list[tuple[int, int]]:
    """The spans of the lines holding a keyword, merged and in order ([] when none does)."""
    starts: set[int] = set()
    for word in keywords:
        at = low.find(word)
        while at != -1:
            line_start = low.rfind("\n", 0, at) + 1
            starts.add(line_start)
            end = low.find("\n", at)
            if end == -1:
                break
            at = low.find(word, end)  # the rest of this line is in already
    spans: list[tuple[int, int]] = []
    for line_start in sorted(starts):
        end = low.find("\n", line_start)
        end = len(low) if end == -1 else end
        if spans and line_start <= spans[-1][1] + 1:
            spans[-1] = (spans[-1][0], end)
        else:
            spans.append((line_start, end))
    return spans


def _pem_tails(text: str) -> str:
    """A key's tail without its BEGIN line (``tail key.pem``, a cut output): the END line and
    the key lines above it go."""
    if "PRIVATE KEY" not in text:
        return text
    out: list[str] = []
    last = 0
    for end in _PEM_END.finditer(text):
        start = text.rfind("\n", 0, end.start()) + 1
        while start > last:  # walk up over the key lines
            above = text.rfind("\n", last, start - 1) + 1
            if not _PEM_LINE.fullmatch(text, above, start - 1):
                break
            start = above
        if start < last:
            start = last
        out += [text[last:start], PLACEHOLDER.format("private-key")]
        last = end.end()
    return "".join(out) + text[last:] if out else text


def _pem_bodies(text: str) -> str:
    if len(text) < 64:  # no full-width key line fits
        return text
    placeholder = "\n" + PLACEHOLDER.format("private-key")

    def replace(match: re.Match[str]) -> str:
        if not pem_body(match):
            return match.group(0)
        return placeholder + ("\n" if match.group(0).endswith("\n") else "")

    out = _PEM_BODY.sub(replace, "\n" + text)
    return out[1:]


#: short texts that redaction left as they were (tags, short summaries: they repeat, and even
#: a clean one costs ~7 µs), found again by a set lookup. Only clean texts are kept (never one
#: that held a secret), at most CLEAN_KEPT (then the set starts again).
CLEAN_MAX_CHARS = 100
CLEAN_KEPT = 4_096
_CLEAN: set[str] = set()


def redact(text: str) -> str:
    """Return ``text`` with every recognised secret replaced."""
    if not text:
        return text
    if len(text) > CLEAN_MAX_CHARS:
        return _redact(text)
    if text in _CLEAN:
        return text
    done = _redact(text)
    if done == text:
        if len(_CLEAN) >= CLEAN_KEPT:
            _CLEAN.clear()
        _CLEAN.add(text)
    return done


def _redact(text: str) -> str:
    view = _View(text)
    k = 0
    while k < len(view.steps):
        step = view.steps[k]
        k += 1
        done = _step(step, text, view)
        # (``sub`` makes a new, equal text when a match failed its check: nothing changed)
        if done is not text and done != text:  # the gates read the new text from here on
            text, view = done, _View(done)
            k = next((n for n, s in enumerate(view.steps) if s.order > step.order), len(view.steps))
    return _pem_bodies(_pem_tails(text))


def _step(step: _Step, text: str, view: _View) -> str:
    """``text`` after one rule (the same object when it replaced nothing)."""
    rule = step.rule
    if step.keywords is None:
        # (a ``within_word`` rule was admitted by its starts, unless it is ungated: ``high-entropy``
        # begins with a quote, which a note often lacks)
        gated = rule.within_word and step.order not in _UNGATED
        if step.found is not None and not gated and not _occurs(step.found, text, step.folded):
            return text
        return rule.pattern.sub(step.replace, text)  # the same object when nothing matched
    bound = None if step.assigns is None else view.last(step.assigns)
    if bound is not None and bound < 0:  # no match: each holds one of ``assigns``
        return text
    found = step.found
    if found is not None and len(found) <= FEW_STARTS and not _occurs(found, text, step.folded):
        return text  # none of its few starts occurs: cheaper than finding its keyword lines
    spans = _keyword_lines(view.low, step.keywords)
    parts: list[str] = []
    last = 0
    changed = False
    for start, end in spans:
        if bound is not None and start > bound:  # this line and those after hold none of ``assigns``
            break
        segment = text[start:end]
        if step.needs is not None and not any(need in segment for need in step.needs):
            done = segment
        elif step.found is None or not view.anchored:
            done = rule.pattern.sub(step.replace, segment)
        else:
            # a place at or before the bound, with a start of any length, ends by ``cut``
            cut = None if bound is None else bound - start + max(map(len, step.found))
            done = _sub_at(rule.pattern, step.replace, segment, step.found, step.folded, cut)
        changed |= done is not segment
        parts += [text[last:start], done]
        last = end
    return "".join(parts) + text[last:] if changed else text


def find_secrets(text: str) -> list[str]:
    """Kinds of secrets present in ``text`` (used by tests and ``doctor``)."""
    found: list[str] = []
    for rule in RULES:
        if rule.kind not in found and redact_with(rule, text) != text:
            found.append(rule.kind)
    if "private-key" not in found and _pem_bodies(_pem_tails(text)) != text:
        found.append("private-key")
    return found


def redact_with(rule: Rule, text: str) -> str:
    """``text`` with one rule applied (over the whole text)."""
    return rule.pattern.sub(_replacer(rule), text)
