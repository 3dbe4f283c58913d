"""Text analysis for working memory: content types, auto-tags and an item's index terms.

The words themselves (identifier splitting, stop words) come from ``core/text.py``, the one
vocabulary the offline merger uses too.
"""

from __future__ import annotations

import re
from itertools import chain

from ..text import terms
from .model import ContentType

_ERROR = re.compile(
    r"(?im)^\s*(?:error|panic|fatal|exception)\b\s*:|traceback \(most recent call last\)"
    r"|^\s+at [\w.$<>]+\(.*:\d+\)|^\s*File \".*\", line \d+|\w+(?:Error|Exception):"
)
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
_EXTENSIONS = "py|ts|tsx|js|jsx|go|rs|java|kt|rb|php|cs|cpp|c|h|sql|yaml|yml|json|toml|md|sh|tf"
_EXT = re.compile(r"\b[\w./-]+\.(" + _EXTENSIONS + r")\b")
_URL = re.compile(r"https?://\S+")


def redact(text: str) -> str:
    """``core.redact.redact``, imported on first use: its rules compile on import, which the MCP
    server's start-up does without (tests/server/test_startup_imports.py)."""
    from ..redact import redact as run

    return run(text)


def detect_type(content: str) -> ContentType:
    if _ERROR.search(content):
        return "error"
    if _DECISION.search(content):
        return "decision"
    if _CODE.search(content):
        return "code"
    if _TOOL.search(content):
        return "tool_output"
    return "prose"


def auto_tags(content: str, content_type: str) -> list[str]:
    tags = [content_type]
    tags += [f".{m.group(1)}" for m in _EXT.finditer(content)]
    tags += [m.group(1) for m in _INFRA.finditer(content.lower())]
    if _URL.search(content):
        tags.append("reference")
    return list(dict.fromkeys(tags))


def normalize_tags(tags: list[str]) -> list[str]:
    """Tags as stored and matched: redacted (a tag is stored and, on Redis, part of a key name;
    redacted before it is lower-cased, which would hide a key's shape), trimmed, lower-case."""
    return list(dict.fromkeys(redact(t).strip().lower() for t in tags if t and t.strip()))


def index_terms(content: str, summary: str | None, tags: list[str]) -> tuple[list[str], list[str]]:
    """(body terms, tag terms) an item is indexed by; the store keeps them as given."""
    body = terms(content + ("\n" + summary if summary else ""))
    return body, list(chain.from_iterable(map(tag_terms, tags)))


def tag_terms(tag: str) -> list[str]:
    """A tag's search terms; a tag with no searchable term (``c++``) is itself, split on
    whitespace."""
    return [word for term in terms(tag.lstrip(".")) or [tag] for word in term.split()]
