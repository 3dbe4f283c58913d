"""Text analysis for working memory: content types, auto-tags and an item's index terms.

The words themselves (identifier splitting, stop words) come from ``core/text.py``, the one
vocabulary the offline merger uses too.
"""

from __future__ import annotations

import re

from ..text import terms
from .model import ContentType


def redact(text: str) -> str:
    """``core.redact.redact``, loaded on first use: its ~90 rules take ~8 ms to compile, which a
    process that only reads working memory never needs (the MCP server's first call, issue 19)."""
    from ..redact import redact as run

    return run(text)


# ``\w(?:Error|Exception):`` finds exactly the texts ``\w+(?:Error|Exception):`` finds (only
# whether there is a match counts) without trying every run of word characters: half the cost.
_ERROR = re.compile(
    r"(?im)^\s*(?:error|panic|fatal|exception)\b\s*:|traceback \(most recent call last\)|"
    r"^\s+at [\w.$<>]+\(.*:\d+\)|^\s*File \".*\", line \d+|\w(?:Error|Exception):"
)
_DECISION = re.compile(
    r"(?i)\b(decided|decision|going with|we chose|chose to|approach:|settled on|agreed to)\b"
)
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
_EXT = re.compile(
    r"\b[\w./-]+\.(py|ts|tsx|js|jsx|go|rs|java|kt|rb|php|cs|cpp|c|h|sql|yaml|yml|json|toml|md|sh|tf)\b"
)
_URL = re.compile(r"https?://\S+")


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
    lowered = content.lower()
    tags += [f".{ext}" for ext in dict.fromkeys(m.group(1) for m in _EXT.finditer(content))]
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
    tag_terms = [word for tag in tags for term in terms(tag.lstrip(".")) or [tag] for word in term.split()]
    return body, tag_terms
