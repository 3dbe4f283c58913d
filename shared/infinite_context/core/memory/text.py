"""Text analysis for working memory: content types, auto-tags and search terms.

Search terms split identifiers the way people query them: ``parseHTTPResponse`` and
``parse_http_response`` both index as ``parse http response`` (plus the whole identifier), so a
query for "http response" finds either.
"""

from __future__ import annotations

import re

from .model import ContentType

_WORD = re.compile(r"[A-Za-z0-9]+(?:[_'][A-Za-z0-9]+)*")
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
_STOP = frozenset(
    "a an and are as at be but by for from has have i in is it its of on or that the this to was we "
    "were will with".split()
)

_ERROR = re.compile(
    r"(?im)^\s*(?:error|panic|fatal|exception)\b\s*:|traceback \(most recent call last\)|"
    r"^\s+at [\w.$<>]+\(.*:\d+\)|^\s*File \".*\", line \d+|\w+(?:Error|Exception):"
)
_DECISION = re.compile(
    r"(?i)\b(decided|decision|going with|we chose|chose to|approach:|settled on|agreed to)\b"
)
_CODE = re.compile(
    r"(?m)^```|^\s*(?:func|def|class|fn|function|interface|struct|impl|package|import)\b[^\n]*[({:]?"
)
_TOOL = re.compile(r"(?m)^\$ |[│┃┌┐└┘├┤─━╭╮╰╯|]{3,}|^\s*\+[-+]{3,}\+")

#: multiplier, half-life in seconds
TYPE_WEIGHTS: dict[str, tuple[float, float]] = {
    "error": (1.5, 30 * 60),
    "decision": (1.3, 6 * 3600),
    "code": (1.2, 6 * 3600),
    "prose": (1.0, 2 * 3600),
    "tool_output": (0.7, 15 * 60),
}
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
    return list(dict.fromkeys(t.strip().lower() for t in tags if t and t.strip()))


def terms(text: str) -> list[str]:
    """Search terms: lowercase words, identifiers split on camelCase and snake_case (the whole
    identifier kept too), stop words dropped."""
    out: list[str] = []
    for word in _WORD.findall(text):
        if "_" not in word and (word.islower() or word.isdigit() or word[1:].islower()):
            out.append(word.lower())  # the common case: nothing to split
            continue
        parts = [p for chunk in word.split("_") for p in _CAMEL.findall(chunk)]
        lowered = word.lower()
        if len(parts) > 1:
            out.append(lowered.replace("_", ""))
            out += [p.lower() for p in parts]
        else:
            out.append(lowered)
    return [t for t in out if t not in _STOP and len(t) > 1]


def index_terms(content: str, summary: str | None, tags: list[str]) -> tuple[list[str], list[str]]:
    """(body terms, tag terms) an item is indexed by; the store keeps them as given. A tag with
    no searchable term (``c++``) is indexed as itself, split on whitespace."""
    body = terms(content + ("\n" + summary if summary else ""))
    tag_terms = [word for tag in tags for term in terms(tag.lstrip(".")) or [tag] for word in term.split()]
    return body, tag_terms


def jaccard(a: str, b: str) -> float:
    left, right = set(terms(a)), set(terms(b))
    if not left and not right:
        return 1.0
    return len(left & right) / len(left | right)
