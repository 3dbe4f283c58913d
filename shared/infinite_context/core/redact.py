"""Secret redaction, run on every text before it is stored or sent to a provider.

Patterns cover the key formats people paste by accident (Anthropic, OpenAI, Google, AWS,
GitHub, Slack, JWTs), private key blocks, passwords inside URLs and ``password=``-style
assignments. A redacted value becomes ``[REDACTED:<kind>]`` so the reader still sees that
something was there and what it was.
"""

from __future__ import annotations

import re
from collections.abc import Callable

_Replacement = str | Callable[[re.Match[str]], str]

_RULES: list[tuple[str, re.Pattern[str], _Replacement]] = [
    (
        "private-key",
        re.compile(
            r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----.*?"
            r"(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|\Z)",
            re.S,
        ),
        "[REDACTED:private-key]",
    ),
    ("anthropic-key", re.compile(r"\bsk-ant-[A-Za-z0-9_\-]{20,}"), "[REDACTED:anthropic-key]"),
    (
        "openai-key",
        re.compile(r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}"),
        "[REDACTED:openai-key]",
    ),
    ("google-key", re.compile(r"\bAIza[0-9A-Za-z_\-]{35}\b"), "[REDACTED:google-key]"),
    (
        "aws-access-key",
        re.compile(r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA)[0-9A-Z]{16}\b"),
        "[REDACTED:aws-access-key]",
    ),
    (
        "github-token",
        re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{40,})\b"),
        "[REDACTED:github-token]",
    ),
    ("slack-token", re.compile(r"\bxox[abprs]-[A-Za-z0-9\-]{10,}"), "[REDACTED:slack-token]"),
    (
        "jwt",
        re.compile(r"\beyJ[A-Za-z0-9_\-]{10,}\.eyJ[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}"),
        "[REDACTED:jwt]",
    ),
    (
        "url-password",
        # scheme://user:password@host -> keep user and host, drop the password.
        re.compile(r"\b([a-zA-Z][a-zA-Z0-9+.\-]*://[^\s:/@]*):([^\s@/]+)@"),
        lambda m: f"{m.group(1)}:[REDACTED:password]@",
    ),
    (
        "assignment",
        # password=..., "api_key": "...", SECRET_TOKEN: ... ; the name is kept, the value dropped.
        re.compile(
            r"""(?ix)
            (\b[\w\-]*(?:password|passwd|pwd|secret|api[_\-]?key|access[_\-]?key|auth[_\-]?token
               |access[_\-]?token|client[_\-]?secret|private[_\-]?key)[\w\-]*
             ["']?\s*[:=]\s*)
            (?!\[REDACTED)
            ("[^"\n]{3,}"|'[^'\n]{3,}'|[^\s,;'"}\]]{3,})
            """
        ),
        lambda m: f"{m.group(1)}[REDACTED:secret]",
    ),
]


def redact(text: str) -> str:
    """Return ``text`` with every recognised secret replaced."""
    if not text:
        return text
    for _kind, pattern, replacement in _RULES:
        text = pattern.sub(replacement, text)
    return text


def find_secrets(text: str) -> list[str]:
    """Kinds of secrets present in ``text`` (used by tests and ``doctor``)."""
    return [kind for kind, pattern, _ in _RULES if pattern.search(text)]
