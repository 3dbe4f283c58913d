"""The fast path of ``redact`` (issue 19) finds exactly what the full rules find.

``redact`` skips a rule where it cannot match: a provider token's rule on a text without a long
enough word holding one of the rule's literal starts, a keyword rule everywhere but where one of
its starts occurs. Three checks that this loses nothing:

* every start ``redact_starts`` reads is a prefix of every way the pattern can begin, by the
  regex parser's own reading of the pattern (``re._parser``: a test may lean on it, the product
  does not: it would cost the hooks ~4 ms at import);
* every ``within_word`` rule's matches have at least WORD_MIN_CHARS characters and no whitespace;
* on real text (the Claude Code fixture transcripts, every line), one fake of every secret kind
  alone and inside that text, and non-ASCII near-misses (``ſecret``: ``(?i)`` matches it), the
  result equals running every rule over the whole text (keyword rules over their keyword lines,
  as before).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from re import _constants as sre  # type: ignore[attr-defined]
from re import _parser as sre_parse  # type: ignore[attr-defined]
from typing import Any

import pytest

from infinite_context_brain.core import redact as fast
from infinite_context_brain.core.redact_rules import RULES, WORD_MIN_CHARS, Rule
from infinite_context_brain.core.redact_starts import starts

from ..conftest import FIXTURES
from .secret_corpus import CORPUS

WHITESPACE = [chr(c) for c in range(0x110000) if chr(c).isspace()]


def full_rules(text: str) -> str:
    """Every rule in order over the whole text (a keyword rule over the lines holding one of
    its keywords, as ``redact`` always did), then the key-body passes."""
    if not text:
        return text
    for rule in RULES:
        replace = fast._replacer(rule)
        if rule.keywords is None:
            text = rule.pattern.sub(replace, text)
            continue
        low = text.encode("ascii", "replace").lower().decode()
        spans = fast._keyword_lines(low, rule.keywords)
        if spans:
            parts: list[str] = []
            last = 0
            for start, end in spans:
                parts += [text[last:start], rule.pattern.sub(replace, text[start:end])]
                last = end
            text = "".join(parts) + text[last:]
    return fast._pem_bodies(fast._pem_tails(text))


# ---- the parser's view of a pattern ----------------------------------------------------------
def heads(seq: list[Any], prefix: str = "") -> set[str]:
    """The literal text each way of matching ``seq`` begins with (every branch, every optional
    piece taken or skipped), as far as it is literal."""
    for i, (op, av) in enumerate(seq):
        rest = list(seq[i + 1 :])
        if op is sre.LITERAL:
            prefix += chr(av)
        elif op in (sre.AT, sre.ASSERT, sre.ASSERT_NOT):
            continue
        elif op is sre.SUBPATTERN:
            return heads(list(av[3]) + rest, prefix)
        elif op is sre.BRANCH:
            return {h for branch in av[1] for h in heads(list(branch) + rest, prefix)}
        elif op is sre.IN and all(item_op is sre.LITERAL for item_op, _ in av):
            return {h for _, code in av for h in heads(rest, prefix + chr(code))}
        elif op in (sre.MAX_REPEAT, sre.MIN_REPEAT, sre.POSSESSIVE_REPEAT):
            low, high, item = av
            # optional: taken once, then the rest; a repeat: its start, nothing more is certain
            found = heads(list(item) + rest, prefix) if high == 1 else heads(list(item), prefix)
            return found | heads(rest, prefix) if low == 0 else found
        else:
            return {prefix}
    return {prefix}


def _in_class(items: list[Any], char: str) -> bool:
    negate = False
    hit = False
    for op, av in items:
        if op is sre.NEGATE:
            negate = True
        elif op is sre.LITERAL:
            hit |= chr(av) == char
        elif op is sre.RANGE:
            hit |= av[0] <= ord(char) <= av[1]
        elif op is sre.CATEGORY:
            probe = {
                sre.CATEGORY_DIGIT: r"\d",
                sre.CATEGORY_NOT_DIGIT: r"\D",
                sre.CATEGORY_SPACE: r"\s",
                sre.CATEGORY_NOT_SPACE: r"\S",
                sre.CATEGORY_WORD: r"\w",
                sre.CATEGORY_NOT_WORD: r"\W",
            }[av]
            hit |= re.fullmatch(probe, char) is not None
        else:
            raise AssertionError(f"class item {op} not understood")
    return hit != negate


def consumers(seq: list[Any]) -> Iterator[tuple[Any, Any]]:
    """Every piece of ``seq`` that consumes a character (lookarounds consume none)."""
    for op, av in seq:
        if op in (sre.AT, sre.ASSERT, sre.ASSERT_NOT, sre.GROUPREF):
            continue  # a group reference repeats a group already walked
        if op is sre.SUBPATTERN:
            yield from consumers(list(av[3]))
        elif op is sre.BRANCH:
            for branch in av[1]:
                yield from consumers(list(branch))
        elif op in (sre.MAX_REPEAT, sre.MIN_REPEAT, sre.POSSESSIVE_REPEAT):
            yield from consumers(list(av[2]))
        elif op is sre.ATOMIC_GROUP:
            yield from consumers(list(av))
        else:
            yield op, av


def matches_whitespace(op: Any, av: Any) -> bool:
    if op is sre.LITERAL:
        return chr(av).isspace()
    if op is sre.IN:
        return any(_in_class(list(av), c) for c in WHITESPACE)
    return True  # ANY, NOT_LITERAL, anything else: assume it can


def _label(rule: Rule) -> str:
    return f"{RULES.index(rule)}-{rule.kind}"


@pytest.mark.parametrize("rule", RULES, ids=_label)
def test_starts_begin_every_match(rule: Rule) -> None:
    found = starts(rule.pattern)
    if found is None:
        return  # the rule runs everywhere
    folded = bool(rule.pattern.flags & re.IGNORECASE)
    for head in heads(list(sre_parse.parse(rule.pattern.pattern, rule.pattern.flags))):
        head = head.lower() if folded else head
        assert any(head.startswith(s) for s in found), (head, found)


def test_starts_are_read_where_they_matter() -> None:
    """The rules that made a clean note slow have starts (else the fast path does nothing)."""
    by_kind = {(rule.kind, rule.keywords is None): starts(rule.pattern) for rule in RULES}
    assert by_kind[("aws-secret", False)] is not None
    assert by_kind[("anthropic-key", True)] == ("sk-ant-",)
    assert starts(RULES[[r.kind for r in RULES].index("secret") + 1].pattern) is not None
    assert sum(starts(r.pattern) is not None for r in RULES if r.within_word) >= len(RULES) - 25


@pytest.mark.parametrize("rule", [r for r in RULES if r.within_word], ids=_label)
def test_within_word_rules_match_one_long_word(rule: Rule) -> None:
    parsed = sre_parse.parse(rule.pattern.pattern, rule.pattern.flags)
    assert parsed.getwidth()[0] >= WORD_MIN_CHARS
    assert not [piece for piece in consumers(list(parsed)) if matches_whitespace(*piece)]


def holds(seq: list[Any], chars: tuple[str, ...]) -> bool:
    """Every way of matching ``seq`` consumes one of ``chars`` (a piece taken every time)."""
    for op, av in seq:
        if op is sre.LITERAL and chr(av) in chars:
            return True
        if op is sre.IN and all(item_op is sre.LITERAL and chr(code) in chars for item_op, code in av):
            return True
        if op is sre.SUBPATTERN and holds(list(av[3]), chars):
            return True
        if op is sre.ATOMIC_GROUP and holds(list(av), chars):
            return True
        if op is sre.BRANCH and all(holds(list(branch), chars) for branch in av[1]):
            return True
        repeat = op in (sre.MAX_REPEAT, sre.MIN_REPEAT, sre.POSSESSIVE_REPEAT)
        if repeat and av[0] >= 1 and holds(list(av[2]), chars):
            return True
    return False


@pytest.mark.parametrize("rule", [r for r in RULES if r.assigns], ids=_label)
def test_every_match_holds_one_of_its_assigns(rule: Rule) -> None:
    assert rule.assigns is not None and rule.keywords is not None
    assert holds(list(sre_parse.parse(rule.pattern.pattern, rule.pattern.flags)), rule.assigns)
    # and none of them is a letter, which ``(?i)`` could match in another case
    assert not any(c.lower() != c.upper() for c in "".join(rule.assigns))


def test_holds_reads_what_a_match_must_take() -> None:
    def check(pattern: str) -> bool:
        return holds(list(sre_parse.parse(pattern)), (":", "="))

    assert check(r"ab\s*=") and check(r"a(?:[:=]|=>)") and check(r"(x)+:")
    assert not check(r"a=?") and not check(r"a(?:=|\s+)") and not check(r"a[:=x]") and not check("(=)*")


def _fixture_lines(size: int = 2_000, per_file: int = 300_000) -> list[str]:
    """The lines of every fixture transcript (the first ``per_file`` characters of each: the
    full rules take ~0.7 s a megabyte), in pieces of ``size`` characters (a tool output is one
    JSON line of up to a megabyte)."""
    lines: list[str] = []
    for path in sorted(Path(FIXTURES).rglob("*.jsonl")):
        text = path.read_text(encoding="utf-8", errors="replace")[:per_file]
        for line in text.splitlines():
            lines += [line[at : at + size] for at in range(0, len(line), size)]
    return lines


def _near_misses(text: str) -> list[str]:
    """``text`` with letters a ``(?i)`` pattern still matches written as non-ASCII ones."""
    return [
        text.replace("s", "\u017f"),  # long s: (?i)s matches it
        text.replace("k", "\u212a"),  # Kelvin sign: (?i)k matches it
        text.replace("e", "é"),
    ]


def _at_every_start() -> list[str]:
    """For each way each rule's pattern can begin (the parser's reading), the forms a secret
    takes after it (assignment, JSON, a flag, a URL parameter, a header), so every place the fast
    path looks at, and every one it skips, is exercised."""
    value = "Zq8xW3rT5yU7iO9pLk2"
    out = []
    for rule in RULES:
        found = sorted({head[:24] for head in heads(list(sre_parse.parse(rule.pattern.pattern)))})
        by_start: dict[str, list[str]] = {}
        for head in found:  # a few of each beginning (a rule's heads run to thousands)
            by_start.setdefault(head[:3], []).append(head)
        for start in [head for group in by_start.values() for head in group[:3] if head]:
            for name in (start, start.upper(), start + "_id", "my_" + start):
                out += [
                    f"{name} = {value}",
                    f"{name}: '{value}'",
                    f'{{"{name}": "{value}"}}',
                    f"cmd --{name} {value} --{name}={value}",
                    f"https://h.example/p?{name}={value}&x=1",
                    f"{name} {value}",
                    f"{name}{value[:12]}{value}",
                    f"export {name.upper()}={value}",
                ]
    return out


def test_fast_path_equals_the_full_rules_on_secrets() -> None:
    texts = _at_every_start()
    assert sum(full_rules(t) != t for t in texts) > len(texts) // 10  # they do hold secrets
    for text, _ in CORPUS.values():
        texts += [text, f"note {text} end", "x" * 20 + " " + text, *_near_misses(text)]
    texts += [
        "api_\u212aey = 'sk9Zq2wLr8Vt3Xy'",
        "\u017fecret = hunter22secret",
        "password=hunter2 and token: abcdef123456 and ſession_key=Zx9q8w7e6r5t",
        'Authorization: Bearer eyJhbGciOi12345678 "x-api-key": "k3y-v4lue-99"',
        "[REDACTED:openai-key] sk-" + "a" * 30,
        # the ``assigns`` gate: the last ``:`` or ``=`` before, among and after the names
        "Error: parse failed: session token cache token_secret Zq8xW3rT5yU7iO9pLk2",
        "Error: parse failed: session token=Zq8xW3rT5yU7iO9pLk2 cache token",
        "note: x\nsession token api_key Zq8xW3rT5yU7iO9pLk2\naws_session_token: Zq8xW3rT5yU7iO9pLk2",
        "token\nAPI_TOKEN=Zq8xW3rT5yU7iO9pLk2\nsession",
        "see https://h.example/p?token=Zq8xW3rT5yU7iO9pLk2 and token later",
        "token: ",
        ":token",
        "=" + "token " * 40 + "password = hunter22secret",
        "ſession_token: Zq8xW3rT5yU7iO9pLk2 then token",
        "--password hunter22x and token",
        "password hunter22x and -token",
        'x "Zq8xW3rT5yU7iO9pLk2Zq8xW3rT5yU7iO9pLk2AbC1" token',
    ]
    for text in texts:
        assert fast.redact(text) == full_rules(text), text


def test_fast_path_equals_the_full_rules_on_transcripts() -> None:
    lines = _fixture_lines()
    assert len(lines) > 1000
    secrets = [text for text, _ in CORPUS.values()]
    for n, line in enumerate(lines):
        assert fast.redact(line) == full_rules(line), line[:300]
        if n % 7 == 0:  # a secret inside real text, at a different place each time
            cut = n % max(1, len(line))
            mixed = line[:cut] + "\n" + secrets[n % len(secrets)] + " " + line[cut:]
            assert fast.redact(mixed) == full_rules(mixed), mixed[:300]


def test_long_texts_take_the_plain_path_with_the_same_result() -> None:
    """Past GATED_MAX characters (a tool output) every rule runs as one pass: same answers."""
    long_lines = []
    for path in sorted(Path(FIXTURES).rglob("*.jsonl")):
        text = path.read_text(encoding="utf-8", errors="replace")[:2_000_000]
        long_lines += [line[:40_000] for line in text.splitlines() if len(line) > fast.GATED_MAX][:4]
    assert len(long_lines) >= 4
    secrets = "\n".join(text for text, _ in CORPUS.values())
    for line in long_lines:
        for text in (line, line + "\n" + secrets):
            assert fast.redact(text) == full_rules(text)


def test_short_clean_texts_are_kept_and_secrets_never(monkeypatch: pytest.MonkeyPatch) -> None:
    """A short text redaction left as it was is found again in ``_CLEAN``, with the same result
    every time; a text that held a secret is never kept."""
    secrets = [text for text, _ in CORPUS.values() if len(text) <= fast.CLEAN_MAX_CHARS]
    assert len(secrets) > 10
    clean = ["cache", "token", "ſession", "auth-flow", "é", " x ", "key: value", "a" * fast.CLEAN_MAX_CHARS]
    monkeypatch.setattr(fast, "_CLEAN", set())
    for _ in range(2):
        for text in secrets + clean:
            assert fast.redact(text) == full_rules(text), text
    assert set(clean) == fast._CLEAN
    assert not fast._CLEAN & set(secrets)
    monkeypatch.setattr(fast, "CLEAN_KEPT", 2)  # full: it starts again
    for text in clean:
        assert fast.redact(text + "!") == text + "!"
    assert len(fast._CLEAN) <= 2
