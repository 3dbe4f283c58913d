"""Secret redaction, run on every text before it is stored or sent to a provider, and before it
is cut to any length (a key cut in half no longer matches its pattern).

The rules (``redact_rules``) are gitleaks' and detect-secrets' formats, ported: provider tokens
by prefix, private-key blocks (also cut off, or only their tail), credentials in headers,
command flags and URLs, ``name = value`` lines whose name says secret, and quoted high-entropy
strings. A redacted value becomes ``[REDACTED:<kind>]`` so the reader still sees that something
was there and what it was; the name before it (``password=``, ``Authorization: Bearer``) stays.

Cost: a rule runs only when one of its keywords occurs in the text (one lower-cased copy, one
substring scan per keyword), so a megabyte of tool output takes tens of milliseconds; the
PostToolUse hook redacts every result it stores.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from .redact_rules import RULES, Rule, pem_body

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


_COMPILED = [
    (rule, _replacer(rule), None if rule.keywords is None else tuple(k.encode() for k in rule.keywords))
    for rule in RULES
]


def _keyword_lines(low: bytes, keywords: tuple[bytes, ...]) -> list[tuple[int, int]]:
    """The spans of the lines holding a keyword, merged and in order ([] when none does)."""
    starts: set[int] = set()
    for word in keywords:
        at = low.find(word)
        while at != -1:
            line_start = low.rfind(b"\n", 0, at) + 1
            starts.add(line_start)
            end = low.find(b"\n", at)
            if end == -1:
                break
            at = low.find(word, end)  # the rest of this line is in already
    spans: list[tuple[int, int]] = []
    for line_start in sorted(starts):
        end = low.find(b"\n", line_start)
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


def redact(text: str) -> str:
    """Return ``text`` with every recognised secret replaced."""
    if not text:
        return text
    low = b""
    low_of: str | None = None
    for rule, replace, keywords in _COMPILED:
        if keywords is None:
            text = rule.pattern.sub(replace, text)  # the same object when nothing matched
            continue
        if low_of is not text:  # one code point a byte: offsets agree with ``text``
            low, low_of = text.encode("ascii", "replace").lower(), text
        spans = _keyword_lines(low, keywords)
        if not spans:
            continue
        parts: list[str] = []
        last = 0
        changed = False
        for start, end in spans:
            segment = text[start:end]
            done = rule.pattern.sub(replace, segment)
            changed |= done is not segment
            parts += [text[last:start], done]
            last = end
        if changed:
            text = "".join(parts) + text[last:]
    return _pem_bodies(_pem_tails(text))


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
