"""Working memory's text analysis after issue 19's shortcuts gives the answers it gave before:
content type, auto-tags and token counts, on the fixture transcripts (every line and every text
block in them) and on edge cases the gates must not miss (upper case, non-ASCII look-alikes)."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path
from re import _constants as sre  # type: ignore[attr-defined]
from re import _parser as sre_parse  # type: ignore[attr-defined]
from typing import Any

import pytest

from infinite_context_brain.core import text as core_text
from infinite_context_brain.core.memory import text as mtext
from infinite_context_brain.core.tokens import count_tokens

from ..conftest import FIXTURES

OLD_ERROR = re.compile("(?im)" + "|".join(pattern for _, pattern in mtext._ERROR_SIGNS))


def detect_type_before(content: str) -> str:
    """Every pattern over the whole text, the error ones as one (as before issue 19)."""
    if OLD_ERROR.search(content):
        return "error"
    if mtext._DECISION.search(content):
        return "decision"
    if mtext._CODE.search(content):
        return "code"
    if mtext._TOOL.search(content):
        return "tool_output"
    return "prose"


def file_tags_before(content: str) -> list[str]:
    return [f".{ext}" for ext in dict.fromkeys(m.group(1) for m in mtext._EXT.finditer(content))]


def auto_tags_before(content: str, content_type: str) -> list[str]:
    """Every pattern over the whole text (as before issue 19)."""
    tags = [content_type, *file_tags_before(content)]
    tags += list(dict.fromkeys(m.group(1) for m in mtext._INFRA.finditer(content.lower())))
    if mtext._URL.search(content):
        tags.append("reference")
    return list(dict.fromkeys(tags))


def count_tokens_before(text: str) -> int:
    """The six-pass count, as written before issue 19."""
    if not text:
        return 0
    total = len(re.findall(r"[A-Za-z]+", text)) + len(re.findall(r"\d+", text))
    total += len(re.findall(r"[^\sA-Za-z\d]", text))
    total += sum((len(w) + 3) // 4 - 1 for w in re.findall(r"[A-Za-z]{7,}", text))
    total += sum((len(d) + 2) // 3 - 1 for d in re.findall(r"\d{4,}", text))
    total += sum((len(ws) - 1) // 4 for ws in re.findall(r"\s{5,}", text))
    return total


def _texts() -> list[str]:
    out: list[str] = []
    for path in sorted(Path(FIXTURES).rglob("*.jsonl")):
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines()[:400]:
            out.append(line[:4000])
            try:
                message = json.loads(line).get("message")
            except (ValueError, AttributeError):
                continue
            content = message.get("content") if isinstance(message, dict) else None
            blocks = content if isinstance(content, list) else [{"text": content}]
            for block in blocks:
                for key in ("text", "content"):
                    value = block.get(key) if isinstance(block, dict) else None
                    if isinstance(value, str):
                        out.append(value[:4000])
    return out


EDGES = [
    "  at com.acme.Billing.load(Billing.java:42)",
    'File "app.py", line 3, in <module>',
    "Traceback (most recent call last):",
    "ERROR: disk full",
    "FATAL :",
    "ValueError: bad",
    "xException: y",
    "\u212aeyError: look-alike K",  # Kelvin sign: (?i) matches it as k
    "paníc: not ascii",
    "$ make test",
    "| a | b | c |",
    "+----+----+",
    "──── box ────",
    "We DECIDED to ship",
    "ſettled on Redis",
    "see src/app.py and infra/main.tf",
    "notes.md.bak and a.py.ts",
    "",
    "     indented\n\t\t\t\t\tcode 12345678 ٣٣٣٣",
    "Redis_x redis k8s-cluster K8S aws.gcp postgresql postgres predis dockerfile docker Redis",
    "rédis redis ſqlite SQLite grpc_ graphql\ngrpc\tterraform2 terraform https://x.example/a",
    "kafka",
    "aws",
]


def test_content_type_and_tags_as_before() -> None:
    texts = _texts() + EDGES
    assert len(texts) > 1000
    for text in texts:
        assert mtext.detect_type(text) == detect_type_before(text), text[:200]
        assert mtext.auto_tags(text, "prose") == auto_tags_before(text, "prose"), text[:200]


def test_line_start_patterns_only_match_at_a_line_start() -> None:
    """What ``_search`` tries only at line starts: every branch begins with ``(?m)^``."""

    def at_start(seq: list[Any]) -> bool:  # ``^`` (a line start with MULTILINE) heads every branch
        op, av = seq[0]
        if op is sre.BRANCH:
            return all(at_start(list(branch)) for branch in av[1])
        return op is sre.AT and av is sre.AT_BEGINNING

    assert len(mtext._AT_LINE_START) == 4
    for pattern in mtext._AT_LINE_START:
        assert pattern.flags & re.MULTILINE
        assert at_start(list(sre_parse.parse(pattern.pattern, pattern.flags))), pattern.pattern
    assert not at_start(list(sre_parse.parse("^a|b")))
    many = "prose line\n" * (mtext.LINES_MAX + 5)
    for text in (many + "  error : x", many + "def f():", many, "x\n\n \n  Error :", "a\ndef"):
        assert mtext.detect_type(text) == detect_type_before(text)


def test_token_counts_as_before() -> None:
    rng = random.Random(19)
    alphabet = "ab1 \t\n٣x_-.9999aaaaaaaaQ"
    fuzz = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 80))) for _ in range(5000)]
    # every ASCII character (the bytes path: \x1c-\x1f are whitespace to ``\s``), in runs
    ascii_chars = [chr(c) for c in range(128)] + [" " * 6, "\x1c\x1d\x1e\x1f\x0b", "a" * 9, "7" * 5]
    fuzz += ["".join(rng.choice(ascii_chars) for _ in range(rng.randint(0, 60))) for _ in range(5000)]
    for text in _texts() + EDGES + fuzz:
        assert count_tokens(text) == count_tokens_before(text), text[:200]


def test_search_terms_as_before(monkeypatch: pytest.MonkeyPatch) -> None:
    """``terms`` word by word from its cache (runs of an ASCII text by ``bytes.translate``)
    equals the loop over the whole text's identifiers, also as the cache starts again."""
    rng = random.Random(7)
    pieces = [chr(c) for c in range(128)] + ["__init__", "don't", "a''b", "HTTPServer_v2", "x_", "é", "ſ"]
    pieces += ["parseHTTPResponse", "load_invoice_42", "K\u212a", "naïve_café", "O'Neil", "it's", "the"]
    fuzz = ["".join(rng.choice(pieces) for _ in range(rng.randint(0, 40))) for _ in range(5000)]
    texts = _texts() + EDGES + fuzz
    for text in texts:
        assert core_text.terms(text) == core_text._word_terms(text), text[:200]
    monkeypatch.setattr(core_text._WORD_TERMS, "size", 3)  # the cache emptied again and again
    for n, text in enumerate(fuzz[:300]):
        text = f"{text} new{n}Word {text}"  # a word not seen yet, and words seen
        assert core_text.terms(text) == core_text._word_terms(text), text[:200]
    assert len(core_text._WORD_TERMS) <= 3
    # a long word (a base64 blob) is worked out, not kept
    blob = "QmFzZTY0" * 40
    assert core_text.terms(f"xy {blob} yz") == core_text._word_terms(f"xy {blob} yz")
    assert blob.encode() not in core_text._WORD_TERMS
    assert all(len(word) <= core_text.WORD_KEPT_CHARS for word in core_text._WORD_TERMS)


def test_tag_terms_as_before(monkeypatch: pytest.MonkeyPatch) -> None:
    """A tag's index terms from ``_TAG_TERMS`` equal the expression written before issue 19."""

    def before(tags: list[str]) -> list[str]:
        return [w for tag in tags for term in core_text.terms(tag.lstrip(".")) or [tag] for w in term.split()]

    tags = [
        "c++",
        ".py",
        "a b",
        "",
        " ",
        "parseHTTP",
        "naïve café",
        "ſession",
        "x",
        "the",
        "k8s",
        "..",
        "a\tb",
    ]
    rng = random.Random(3)
    lists = [[rng.choice(tags) for _ in range(rng.randint(0, 5))] for _ in range(300)] + [tags]
    for found in lists:
        assert mtext.index_terms("body", None, found)[1] == before(found), found
    monkeypatch.setattr(mtext, "_TAG_TERMS", core_text.Memo(mtext._tag_terms, 2, mtext.TAG_KEPT_CHARS))
    for found in lists:
        assert mtext.index_terms("body", "summary", found)[1] == before(found), found
    assert len(mtext._TAG_TERMS) <= 2
    long_tag = "t" * (mtext.TAG_KEPT_CHARS + 1)
    assert mtext.index_terms("body", None, [long_tag])[1] == before([long_tag])
    assert long_tag not in mtext._TAG_TERMS
