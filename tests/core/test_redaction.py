"""Redaction: one fake per secret format, through every surface that stores text, then a grep of
everything persisted (SQLite file and WAL plus a dump, the data dir, Redis keys and values, logs).
"""

from __future__ import annotations

import io
import json
import logging
import re
import sqlite3
from pathlib import Path

import pytest

from infinite_context_brain.core.brain import ProjectBrain
from infinite_context_brain.core.config import load_settings
from infinite_context_brain.core.logs import JsonLineFormatter
from infinite_context_brain.core.redact import find_secrets, redact
from infinite_context_brain.core.redact_rules import RULES, Rule
from infinite_context_brain.core.transcript.handoff import checkpoint_from_transcript
from infinite_context_brain.core.transcript.observe import build_observation
from infinite_context_brain.core.transcript.service import transcript_stats

from ..conftest import FIXTURES
from ..helpers.redis_servers import RedisServer
from .clean_corpus import CLEAN
from .secret_corpus import CORPUS, FORMATS, LEAKED_BEFORE

INVISIBLE = re.compile("[\u00ad\u200b-\u200d\u2060\ufeff]")


def _readable_words(text: str, secrets: list[str]) -> list[str]:
    """The words of ``text`` outside the whitespace-separated pieces that hold a secret."""
    pieces = re.split(r"(\s+)", INVISIBLE.sub("", text))
    bare = [INVISIBLE.sub("", s) for s in secrets]
    kept = [p for p in pieces if not any(s[:8] in p or (p.strip() and p in s) for s in bare)]
    return re.findall(r"[A-Za-z]{3,}", "".join(kept))


@pytest.mark.parametrize("kind", sorted(CORPUS))
def test_each_format_and_wrapping_is_redacted_and_stays_readable(kind: str) -> None:
    text, secrets = CORPUS[kind]
    out = redact(text)
    assert not [s for s in secrets if s in out], out
    assert "[REDACTED:" in out and redact(out) == out  # idempotent
    assert find_secrets(text)
    assert not [w for w in _readable_words(text, secrets) if w not in out], out


def test_the_corpus_holds_the_reference_formats_and_every_wrapping_that_leaked() -> None:
    assert len(FORMATS) >= 80
    assert not set(LEAKED_BEFORE) - set(CORPUS)


def _finds(rule: Rule, text: str) -> list[re.Match[str]]:
    """The matches of one rule over the whole text that it would replace."""
    return [
        m
        for m in rule.pattern.finditer(text)
        if m.end(rule.group) > m.start(rule.group) and (rule.check is None or rule.check(m))
    ]


def test_every_rule_redacts_a_corpus_line() -> None:
    texts = [text for text, _ in CORPUS.values()]
    assert not [f"{n} {r.kind}" for n, r in enumerate(RULES) if not any(_finds(r, t) for t in texts)]


def _fixture_texts(per_file: int = 200_000) -> list[str]:
    """The first ``per_file`` characters of every fixture transcript, line by line."""
    lines: list[str] = []
    for path in sorted(Path(FIXTURES).rglob("*.jsonl")):
        lines += path.read_text(encoding="utf-8", errors="replace")[:per_file].splitlines()
    return lines


@pytest.mark.fixtures
def test_anchored_rules_match_only_where_one_of_their_keywords_begins() -> None:
    """A rule tried only where one of its keywords occurs loses nothing: each match its pattern
    finds anywhere in a text (secrets alone and inside real transcript lines, in several cases)
    begins with one of the rule's keywords."""
    secrets = [text for text, _ in CORPUS.values()]
    texts = secrets + [t.upper() for t in secrets] + [t.swapcase() for t in secrets]
    texts += [
        f"{line[:300]} {secrets[n % len(secrets)]} {line[300:600]}" for n, line in enumerate(_fixture_texts())
    ]
    missed = []
    for rule in (r for r in RULES if r.anchored):
        for text in texts:
            low = text.lower()
            missed += [
                (rule.kind, m.group())
                for m in _finds(rule, text)
                if not low.startswith(rule.keywords, m.start())
            ]
    assert not missed


@pytest.mark.parametrize("text", CLEAN, ids=[t[:40] for t in CLEAN])
def test_clean_text_is_kept(text: str) -> None:
    assert redact(text) == text


#: what the fixture transcripts hold that looks like a credential, and is redacted: fake keys
#: written into tests by the sessions, and a page's CSRF token
FIXTURE_CREDENTIALS = ("test-key-12345", "test-api-key-12345", "test-token-67890", 'name=\\"csrf-token\\"')


@pytest.mark.fixtures
def test_the_fixture_transcripts_lose_only_what_looks_like_a_credential() -> None:
    changed = 0
    for path in sorted(Path(FIXTURES).rglob("*.jsonl")):
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            if redact(line) != line:
                changed += 1
                assert any(c in line for c in FIXTURE_CREDENTIALS), redact(line)[:2000]
    assert changed


@pytest.mark.parametrize("kind", ["github", "anthropic", "slack_bot", "stripe", "dockerhub", "npm"])
def test_a_token_cut_by_a_line_break_is_gone_on_both_sides(kind: str) -> None:
    (token,) = CORPUS[kind][1]
    for cut in range(1, len(token) - 1):
        for brk in ("\n", "\r\n"):
            out = redact(f"echo {token[:cut]}{brk}{token[cut:]} | wc -c")
            # (a piece shorter than that is a few characters of a key that is gone)
            pieces = (token[:cut], token[cut:])
            assert not [piece for piece in pieces if len(piece) >= 8 and piece in out], out
            assert out.startswith("echo ") and out.endswith(" | wc -c") and brk in out


@pytest.mark.parametrize("kind", ["github", "openai", "aws_access", "gitlab", "supabase", "jwt"])
def test_zero_width_characters_inside_a_key_do_not_hide_it(kind: str) -> None:
    (token,) = CORPUS[kind][1]
    for at in range(1, len(token)):
        for mark in ("\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u00ad"):
            out = redact(f"key: {token[:at]}{mark}{token[at:]} end")
            assert token[:at] not in out or at < 4, out
            assert token[at:] not in out or len(token) - at < 4, out


def test_zero_width_joiners_between_other_letters_are_kept() -> None:
    text = "family 👨\u200d👩\u200d👧, Persian می\u200cخواهم, Hindi क्\u200dष"
    assert redact(text) == text


def test_upper_case_tokens_are_redacted() -> None:
    for kind in ("github", "gitlab", "stripe", "npm", "slack_bot", "dockerhub", "supabase"):
        (token,) = CORPUS[kind][1]
        for variant in (token.upper(), token[:5].upper() + token[5:]):
            assert variant not in redact(f"value {variant} here"), variant


def test_label_does_not_shield_a_value() -> None:
    assert "s3cretValue9" not in redact("db: password = s3cretValue9")
    assert "Zx81-kq" not in redact("secret: db_pass = Zx81-kq")


def test_truncated_output_keeps_no_key_lines() -> None:
    text, secrets = CORPUS["private_key"]
    obs = build_observation("toolu_1", "Bash", {"command": "cat id_rsa"}, text + "done\n")
    assert not [s for s in secrets if s in obs.text]
    cut = text[: len(text) - 120]  # no END line: the block runs to the end of the text
    assert not [s for s in secrets[:-3] if s in redact(cut)]


PROVIDER_KEYS = {
    "anthropic": "sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789",
    "openai": "sk-proj-abcdefghijklmnopqrstuvwxyz012345",
    "google": "AIzaSyA1234567890abcdefghijklmnopqrstuv",
    "aws": "AKIAIOSFODNN7EXAMPLE",
    "github": "ghp_" + "a" * 36,
}


@pytest.mark.parametrize("kind", sorted(PROVIDER_KEYS))
def test_redacts_provider_keys(kind: str) -> None:
    text = f"use {PROVIDER_KEYS[kind]} now"
    out = redact(text)
    assert PROVIDER_KEYS[kind] not in out and "[REDACTED:" in out and out.startswith("use ")


def test_redacts_blocks_urls_and_assignments() -> None:
    text = (
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY-----\n"
        "db postgres://admin:s3cr3tpw@localhost:5432/app\n"
        'password = "hunter22"\nAPI_KEY: abcdef123\n"client_secret": "zzz999"\n'
        "the password policy is strict"
    )
    out = redact(text)
    for secret in ("MIIEow", "s3cr3tpw", "hunter22", "abcdef123", "zzz999"):
        assert secret not in out
    assert "postgres://admin:[REDACTED:password]@localhost" in out
    assert "password policy is strict" in out  # prose about passwords is kept
    assert find_secrets(text) and redact(out) == out  # idempotent: placeholders stay as they are


# ---- every surface, then a grep of everything persisted -----------------------------------------
def _transcript(path: Path, project: Path) -> None:
    lines = []
    for n, (kind, (text, _secrets)) in enumerate(sorted(CORPUS.items())):
        bash, read = f"toolu_b{n:03d}", f"toolu_r{n:03d}"
        lines.append(
            {
                "type": "assistant",
                "uuid": f"a{n}",
                "cwd": str(project),
                "message": {
                    "id": f"msg{n}",
                    "content": [
                        {"type": "text", "text": f"Running {kind}: {text}"},
                        {"type": "tool_use", "id": bash, "name": "Bash", "input": {"command": text}},
                        {"type": "tool_use", "id": read, "name": "Read", "input": {"file_path": "/p/.env"}},
                    ],
                    "usage": {"input_tokens": 100 + n, "output_tokens": 10},
                },
            }
        )
        output = "building\n" * 30 + text + "\nexit code 1: error: failed with " + text
        lines.append(
            {
                "type": "user",
                "uuid": f"u{n}",
                "cwd": str(project),
                "message": {
                    "content": [
                        {"type": "tool_result", "tool_use_id": bash, "content": output},
                        {"type": "tool_result", "tool_use_id": read, "content": f"     1\t{text}"},
                    ]
                },
            }
        )
        lines.append({"type": "user", "uuid": f"p{n}", "message": {"content": f"please use {text}"}})
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))


def _redis_dump(url: str) -> bytes:
    import redis

    client = redis.Redis.from_url(url)
    out = io.BytesIO()
    for key in client.scan_iter(count=1000):
        out.write(key + b"\n")
        kind = client.type(key)
        if kind == b"string":
            out.write(client.get(key) or b"")
        elif kind == b"hash":
            for field, value in client.hgetall(key).items():
                out.write(field + b"=" + value + b"\n")
        elif kind == b"list":
            out.write(b"\n".join(client.lrange(key, 0, -1)))
        elif kind == b"set":
            out.write(b"\n".join(client.smembers(key)))
        elif kind == b"zset":
            out.write(b"\n".join(client.zrange(key, 0, -1)))
        elif kind == b"stream":
            out.write(repr(client.xrange(key)).encode())
        out.write(b"\n")
    client.close()
    return out.getvalue()


def _persisted(tmp_path: Path, store_url: str, data_dir: Path) -> bytes:
    blobs = [p.read_bytes() for p in data_dir.rglob("*") if p.is_file()]
    if store_url.startswith("sqlite"):
        db = Path(store_url.removeprefix("sqlite:///"))
        blobs += [p.read_bytes() for p in db.parent.glob(db.name + "*")]
        with sqlite3.connect(db) as conn:  # a value split over two pages is whole in the dump
            blobs.append("\n".join(conn.iterdump()).encode())
    else:
        blobs.append(_redis_dump(store_url))
    return b"\n".join(blobs)


@pytest.mark.parametrize("backend", ["sqlite", "redis"])
def test_no_secret_is_persisted_anywhere(
    backend: str, tmp_path: Path, project_dir: Path, request: pytest.FixtureRequest
) -> None:
    if backend == "redis":
        server: RedisServer = request.getfixturevalue("redis_server")
        store_url = server.url.rsplit("/", 1)[0] + "/7"
        import redis

        redis.Redis.from_url(store_url).flushdb()
    else:
        store_url = f"sqlite:///{tmp_path / 'brain.db'}"
    data_dir = tmp_path / "data"
    settings = load_settings(store_url=store_url, data_dir=str(data_dir))
    everything = "\n".join(text for text, _ in CORPUS.values())
    log_stream = io.StringIO()
    handler = logging.StreamHandler(log_stream)
    handler.setFormatter(JsonLineFormatter())
    logging.getLogger().addHandler(handler)
    try:
        with ProjectBrain.open(project_dir, settings) as brain:
            brain.checkpoint(everything)  # free-text checkpoint
            memory = brain.memory()
            for kind, (text, secrets) in sorted(CORPUS.items()):
                tags = [*[s for s in secrets if len(s) <= 100][:3], kind]
                memory.store_item(content=f"{kind}: {text}", summary=f"about {text}"[:2000], tags=tags)
            transcript = tmp_path / "session.jsonl"
            _transcript(transcript, project_dir)
            checkpoint_from_transcript(brain, transcript, "clear")  # the hand-off (digest)
            transcript_stats(transcript, settings=settings)  # observations built on the fly
            for n, (_kind, (text, _secrets)) in enumerate(sorted(CORPUS.items())):
                brain.observe(  # the PostToolUse hook
                    {
                        "tool_use_id": f"toolu_h{n:03d}",
                        "tool_name": "Bash",
                        "tool_input": {"command": text},
                        "tool_response": {"stdout": "x\n" * 50 + text, "stderr": text},
                        "cwd": str(project_dir),
                    },
                )
            logging.getLogger("infinite_context_brain.test").warning("provider said %s", everything)
    finally:
        logging.getLogger().removeHandler(handler)
    persisted = _persisted(tmp_path, store_url, data_dir) + log_stream.getvalue().encode()
    assert b"REDACTED" in persisted
    found = {
        kind: [s for s in secrets if s.encode() in persisted] for kind, (_text, secrets) in CORPUS.items()
    }
    assert {kind: left for kind, left in found.items() if left} == {}


def test_one_key_line_left_by_a_cut_is_redacted_but_prose_is_not() -> None:
    from infinite_context_brain.core.redact import redact

    from .secret_corpus import CORPUS

    line, secrets = CORPUS["private_key_tail"]
    for cut in (line[:80], line[:90]):  # a summary or tag cut after the first key line
        assert not any(s[:20] in redact(cut) for s in secrets), cut
    camel = "x\n" + "ThisIsAPlainSentenceWithoutSpacesButItIsNotRandomAtAllReallyOk12"
    assert redact(camel) == camel


def test_a_log_line_made_while_its_thread_loads_redaction_is_held_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A signal handler's line (stopping.py) can come while its own thread is importing
    ``core.redact`` (the first log line loads it): the module is then in ``sys.modules`` without
    its functions yet. The line is written without anything of its message, never unredacted, and
    never as a logging error."""
    import sys
    import types

    from infinite_context_brain.core.logs import HELD_BACK

    text, secrets = CORPUS[sorted(CORPUS)[0]]
    record = logging.makeLogRecord({"msg": "stopping with %s", "args": (text,), "levelname": "INFO"})
    monkeypatch.setitem(
        sys.modules,
        "infinite_context_brain.core.redact",
        types.ModuleType("infinite_context_brain.core.redact"),
    )
    line = JsonLineFormatter().format(record)
    assert json.loads(line)["msg"] == HELD_BACK and not [s for s in secrets if s in line], line
    monkeypatch.undo()  # loaded: the same line is written, redacted
    line = JsonLineFormatter().format(record)
    assert "stopping with" in json.loads(line)["msg"] and not [s for s in secrets if s in line]
