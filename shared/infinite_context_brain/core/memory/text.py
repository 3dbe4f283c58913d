"""Text analysis for working memory: content types, auto-tags and an item's index terms.

The words themselves (identifier splitting, stop words) come from ``core/text.py``, the one
vocabulary the offline merger uses too.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from itertools import chain

from ..text import Memo, runs_table, terms
from .model import ContentType


def redact(text: str) -> str:
    """``core.redact.redact``, loaded on first use: its ~90 rules take ~8 ms to compile, which a
    process that only reads working memory never needs (the MCP server's first call, issue 19)."""
    return _redactor()(text)


@functools.cache
def _redactor() -> Callable[[str], str]:
    """``core.redact.redact``, imported once (an import statement run on every call cost ~3 µs,
    and a ``store`` redacts its content, summary and each tag)."""
    from ..redact import redact as run

    return run


# An error: any of these patterns matches (what one ``a|b|c`` pattern found, one search each),
# each tried only where the text holds one of its words: the engine tries a pattern that ignores
# case at every position (~17 µs for the five as one on a 500-character note, a tenth of a
# ``store``), a substring scan is ~0.3 µs. ``(?i)`` also matches a few non-ASCII letters (K for
# k): a text that is not ASCII gets every pattern. ``\w(?:Error|Exception):`` finds exactly the
# texts ``\w+(?:Error|Exception):`` finds (only whether there is a match counts), at half the cost.
_ERROR_SIGNS = (
    (("error", "panic", "fatal", "exception"), r"^\s*(?:error|panic|fatal|exception)\b\s*:"),
    (("traceback (most recent call last)",), r"traceback \(most recent call last\)"),
    (("at ",), r"^\s+at [\w.$<>]+\(.*:\d+\)"),
    (('file "',), r"^\s*File \".*\", line \d+"),
    (("error:", "exception:"), r"\w(?:Error|Exception):"),
)
_ERRORS = tuple((needs, re.compile("(?im)" + pattern)) for needs, pattern in _ERROR_SIGNS)
_DECISION_WORDS = (
    "decided",
    "decision",
    "going with",
    "we chose",
    "chose to",
    "approach:",
    "settled on",
    "agreed to",
)
_DECISION = re.compile(r"(?i)\b(" + "|".join(map(re.escape, _DECISION_WORDS)) + r")\b")
_CODE = re.compile(
    r"(?m)^```|^\s*(?:func|def|class|fn|function|interface|struct|impl|package|import)\b[^\n]*[({:]?"
)
_TOOL = re.compile(r"(?m)^\$ |[│┃┌┐└┘├┤─━╭╮╰╯|]{3,}|^\s*\+[-+]{3,}\+")
# Likewise gated: a decision needs one of its words, tool output a ``$ ``, ``|`` or ``+`` (the
# box-drawing characters are not ASCII)
_TOOL_NEEDS = ("$ ", "|", "+")

INFRA = (
    "kubernetes",
    "k8s",
    "docker",
    "postgres",
    "postgresql",
    "mysql",
    "redis",
    "kafka",
    "terraform",
    "aws",
    "gcp",
    "azure",
    "nginx",
    "sqlite",
    "mongodb",
    "helm",
    "ansible",
    "graphql",
    "grpc",
)
_INFRA = re.compile(r"\b(" + "|".join(INFRA) + r")\b")
# In an ASCII text an ``_INFRA`` match is a whole run of word characters (each name is one):
# the runs come from ``bytes.translate`` + ``split`` and are looked up in a set, all in C
# (~3x faster than the pattern, tried at every position); the same tags, in the same order.
_INFRA_NAMES = frozenset(name.encode("ascii") for name in INFRA)
_WORD_BYTES = runs_table(lambda c: c.isalnum() or c == "_")
_EXTENSIONS = "py|ts|tsx|js|jsx|go|rs|java|kt|rb|php|cs|cpp|c|h|sql|yaml|yml|json|toml|md|sh|tf"
_EXT = re.compile(r"\b[\w./-]+\.(" + _EXTENSIONS + r")\b")
#: how every ``_EXT`` match ends; it starts with a literal, which the engine finds fast, while
#: ``_EXT`` is tried at every word character: a note without one skips ``_EXT``
_EXT_END = re.compile(r"\.(?:" + _EXTENSIONS + r")\b")
_URL = re.compile(r"https?://\S+")


def _may_hold(content: str, lowered: str, needs: tuple[str, ...]) -> bool:
    return not content.isascii() or any(need in lowered for need in needs)


#: patterns every match of which begins at a line start (``(?m)^`` heads each branch: a test
#: reads them with the regex parser)
_AT_LINE_START = frozenset(sign for _, sign in _ERRORS if sign.pattern.startswith("(?im)^")) | {_CODE}
#: a text with more lines than this is searched by the pattern itself (one pass in C)
LINES_MAX = 32


def _search(pattern: re.Pattern[str], text: str) -> bool:
    """Whether ``pattern`` occurs in ``text``. One that only matches at a line start is tried
    there alone on a text of a few lines: the engine tries such a pattern at every position
    (~5-10 µs each on a 500-character note, a one-line note tries once)."""
    if pattern not in _AT_LINE_START or text.count("\n") > LINES_MAX:
        return pattern.search(text) is not None
    at = 0
    while pattern.match(text, at) is None:
        at = text.find("\n", at) + 1
        if not at:
            return False
    return True


def detect_type(content: str) -> ContentType:
    lowered = content.lower()
    if any(_may_hold(content, lowered, needs) and _search(sign, content) for needs, sign in _ERRORS):
        return "error"
    if _may_hold(content, lowered, _DECISION_WORDS) and _DECISION.search(content):
        return "decision"
    if _search(_CODE, content):
        return "code"
    if _may_hold(content, content, _TOOL_NEEDS) and _TOOL.search(content):
        return "tool_output"
    return "prose"


def auto_tags(content: str, content_type: str) -> list[str]:
    tags = [content_type]
    lowered = content.lower()
    if _EXT_END.search(content):
        tags += [f".{ext}" for ext in dict.fromkeys(m.group(1) for m in _EXT.finditer(content))]
    if lowered.isascii():
        runs = lowered.encode("ascii").translate(_WORD_BYTES).split()
        tags += [name.decode("ascii") for name in dict.fromkeys(filter(_INFRA_NAMES.__contains__, runs))]
    else:
        tags += list(dict.fromkeys(m.group(1) for m in _INFRA.finditer(lowered)))
    if _URL.search(content):
        tags.append("reference")
    return list(dict.fromkeys(tags))


def normalize_tags(tags: list[str]) -> list[str]:
    """Tags as stored and matched: redacted (a tag is stored and, on Redis, part of a key name;
    redacted before it is lower-cased, which would hide a key's shape), trimmed, lower-case."""
    return list(dict.fromkeys(redact(t).strip().lower() for t in tags if t and t.strip()))


def index_terms(content: str, summary: str | None, tags: list[str]) -> tuple[list[str], list[str]]:
    """(body terms, tag terms) an item is indexed by; the store keeps them as given. A tag with
    no searchable term (``c++``) is indexed as itself, split on whitespace."""
    body = terms(content + ("\n" + summary if summary else ""))
    return body, list(chain.from_iterable(map(_TAG_TERMS.__getitem__, tags)))


def _tag_terms(tag: str) -> tuple[str, ...]:
    return tuple(word for term in terms(tag.lstrip(".")) or [tag] for word in term.split())


#: distinct tags whose terms ``_TAG_TERMS`` keeps, of at most TAG_KEPT_CHARS characters each
#: (the longest a tag may be)
TAGS_KEPT = 4_096
TAG_KEPT_CHARS = 100
#: a tag's terms: tags repeat, and each took a ``terms`` call (~2 µs; a ``store`` indexes 3-4)
_TAG_TERMS: Memo[str, tuple[str, ...]] = Memo(_tag_terms, TAGS_KEPT, TAG_KEPT_CHARS)
