"""Transcript reader, context meter, observations and the transform, on the real fixtures."""

from __future__ import annotations

import copy
import hashlib
import subprocess
import textwrap
from pathlib import Path

import orjson
import pytest

from infinite_context_brain.core.models import Observation
from infinite_context_brain.core.transcript.locate import live_transcript, project_slug
from infinite_context_brain.core.transcript.meter import measure
from infinite_context_brain.core.transcript.observe import build_observation
from infinite_context_brain.core.transcript.reader import (
    AssistantEntry,
    SystemEntry,
    TranscriptReader,
    UserEntry,
    subagent_files,
)
from infinite_context_brain.core.transcript.service import _load, compress, expand, transcript_stats
from infinite_context_brain.core.transcript.transform import MARKER, TransformOptions, transform

from ..conftest import FIXTURES, PYTHON

ALL = sorted(FIXTURES.rglob("*.jsonl"))
MAIN = sorted(p for p in ALL if "subagents" not in p.parts)
BIG = FIXTURES / "spotter" / "4d5611e5-241a-462a-8d15-5122611a9569.jsonl"
COMPACTED = [
    FIXTURES / "spotter" / "258c7280-ae70-4798-800f-63464d01a85d.jsonl",
    BIG,
]


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def messages_of(path: Path) -> list[dict[str, object]]:
    return [obj for _n, obj in _load(path)[0]]


@pytest.mark.fixtures
def test_fixtures_are_present() -> None:
    assert len(MAIN) >= 8 and len(ALL) > len(MAIN), f"fixtures missing under {FIXTURES}"


@pytest.mark.fixtures
@pytest.mark.parametrize("path", ALL, ids=lambda p: p.name[:24])
def test_every_fixture_parses(path: Path) -> None:
    reader = TranscriptReader(path)
    entries = list(reader)
    assert reader.stats.malformed == 0
    assert entries, "no entries"
    replies = [e for e in entries if isinstance(e, AssistantEntry)]
    # split replies are merged: one entry per message id
    ids = [r.message_id for r in replies]
    assert len(ids) == len(set(ids))
    uses = {u.id for r in replies for u in r.tool_uses}
    results = {t.tool_use_id for e in entries if isinstance(e, UserEntry) for t in e.tool_results}
    assert results <= uses  # every result answers a tool use we saw


@pytest.mark.fixtures
def test_compaction_boundaries_sidechains_and_subagent_files_are_known() -> None:
    path = COMPACTED[0]
    entries = list(TranscriptReader(path))
    boundaries = [e for e in entries if isinstance(e, SystemEntry) and e.subtype == "compact_boundary"]
    assert len(boundaries) == 1 and boundaries[0].compact_pre_tokens
    assert any(isinstance(e, UserEntry) and e.is_compact_summary for e in entries)
    subagents = subagent_files(path)
    assert subagents and all(p.suffix == ".jsonl" for p in subagents)
    assert any(e.is_sidechain for e in TranscriptReader(subagents[0]) if isinstance(e, AssistantEntry))


@pytest.mark.fixtures
def test_malformed_unknown_and_empty_input_are_counted_not_fatal(tmp_path: Path) -> None:
    good = (FIXTURES / "spotter" / "short.jsonl").read_bytes().splitlines(keepends=True)
    broken = tmp_path / "broken.jsonl"
    broken.write_bytes(
        good[0]
        + b'{"type": "assistant", "message": {"id": "m1", "content": [{"type": "te\n'  # truncated
        + b"not json at all\n"
        + b'{"type": "brand-new-entry-type", "x": 1}\n'
        + b"[1, 2, 3]\n"
        + b"\n"
        + b"".join(good[1:])
        + b'{"type": "user", "message": {"content": [{"type": "tool_result"'  # cut mid-write
    )
    reader = TranscriptReader(broken)
    entries = list(reader)
    assert reader.stats.malformed == 3
    assert reader.stats.unknown_types == {"brand-new-entry-type": 1}
    assert len(entries) == len(list(TranscriptReader(FIXTURES / "spotter" / "short.jsonl")))

    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    assert list(TranscriptReader(empty)) == []
    assert measure(empty).context_tokens is None
    stats = transcript_stats(empty)
    assert stats.tool_tokens_before == 0 and stats.curve == []


@pytest.mark.fixtures
@pytest.mark.slow  # writes and streams 200 MB in a child process
def test_a_200_mb_transcript_streams_in_bounded_memory(tmp_path: Path) -> None:
    big = tmp_path / "huge.jsonl"
    lines = (FIXTURES / "spotter" / "tool_heavy.jsonl").read_bytes()
    with open(big, "wb") as handle:
        while handle.tell() < 200 * 1024 * 1024:
            handle.write(lines)
    script = textwrap.dedent(
        f"""
        import re
        from pathlib import Path
        from infinite_context_brain.core.transcript.reader import TranscriptReader
        from infinite_context_brain.core.transcript.meter import measure
        reader = TranscriptReader(Path({str(big)!r}))
        count = sum(1 for _ in reader)
        meter = measure(Path({str(big)!r}))
        # VmHWM, not ru_maxrss: the latter keeps the (large) pytest parent's peak across exec.
        hwm = int(re.search(r"VmHWM:\\s+(\\d+)", open("/proc/self/status").read()).group(1))
        print(count, reader.stats.lines, meter.context_tokens, hwm // 1024)
        """
    )
    out = subprocess.run([PYTHON, "-c", script], capture_output=True, text=True, timeout=300, check=True)
    entries, lines_read, context, peak_mb = (int(x) for x in out.stdout.split())
    assert lines_read > 200_000 and entries > 50_000 and context > 0, out.stdout
    assert peak_mb < 150, f"peak RSS {peak_mb} MB while streaming a 200 MB file"


@pytest.mark.fixtures
@pytest.mark.parametrize("path", COMPACTED, ids=lambda p: p.name[:8])
def test_meter_is_within_3_percent_at_every_real_compaction(path: Path) -> None:
    meter = measure(path)
    assert meter.compactions, "fixture has a compaction"
    for c in meter.compactions:
        assert c.pre_tokens and c.measured
        assert abs(c.measured - c.pre_tokens) / c.pre_tokens < 0.03, c
    assert meter.context_window == 200_000 and meter.context_tokens
    assert meter.by_category and any(k.startswith("tool:") for k in meter.by_category)


@pytest.mark.fixtures
def test_transform_never_touches_the_file_or_the_input_objects() -> None:
    before_hash = sha(BIG)
    messages = messages_of(BIG)
    snapshot = copy.deepcopy(messages)
    out, stats = transform(messages)
    assert messages == snapshot  # inputs not mutated
    assert out is not messages and len(out) == len(messages)
    assert sha(BIG) == before_hash
    assert stats.replaced > 50 and stats.tokens_after < 0.2 * stats.tokens_before
    replaced = [m for m, o in zip(messages, out, strict=True) if m is not o]
    assert replaced and all(m.get("type") == "user" for m in replaced)
    sample = next(
        b["content"]
        for m in out
        for b in (m.get("message") or {}).get("content") or []  # type: ignore[union-attr]
        if isinstance(b, dict) and str(b.get("content", "")).startswith(MARKER)
    )
    first_line = sample.splitlines()[0]
    assert " tokens; " in first_line and "expand toolu_" in first_line


@pytest.mark.fixtures
def test_transform_messages_is_gated_by_endless_mode() -> None:
    from infinite_context_brain.core.config import load_settings
    from infinite_context_brain.core.transcript.service import transform_messages

    messages = messages_of(FIXTURES / "spotter" / "tool_heavy.jsonl")
    off, stats = transform_messages(messages, load_settings())
    assert off == messages and off is not messages and stats.replaced == 0
    on, stats = transform_messages(messages, load_settings(endless_mode=True, transform_keep_recent=1))
    assert stats.replaced > 0 and stats.kept_recent == 1
    assert sum(a is not b for a, b in zip(messages, on, strict=True)) == stats.replaced


@pytest.mark.fixtures
def test_keep_recent_at_least_all_tool_uses_is_identity() -> None:
    messages = messages_of(COMPACTED[0])
    uses = sum(
        1
        for m in messages
        if m.get("type") == "assistant"
        for b in (m.get("message") or {}).get("content") or []  # type: ignore[union-attr]
        if isinstance(b, dict) and b.get("type") == "tool_use"
    )
    out, stats = transform(messages, options=TransformOptions(keep_recent=uses))
    assert all(a is b for a, b in zip(messages, out, strict=True))
    assert stats.replaced == 0 and stats.kept_recent > 0
    some, _ = transform(messages, options=TransformOptions(keep_recent=10))
    assert sum(a is not b for a, b in zip(messages, some, strict=True)) > 0


@pytest.mark.fixtures
def test_stored_observations_are_used_and_a_slow_store_falls_back_to_building() -> None:
    messages = messages_of(FIXTURES / "spotter" / "tool_heavy.jsonl")
    out, _ = transform(messages)
    target = next(
        b["tool_use_id"]
        for m, o in zip(messages, out, strict=True)
        if m is not o
        for b in o["message"]["content"]  # type: ignore[index]
        if isinstance(b, dict) and b.get("type") == "tool_result"
    )
    stored = Observation(
        tool_use_id=target, tool_name="Bash", text="FROM THE HOOK", original_tokens=9, tokens=3
    )
    out, stats = transform(messages, lambda ids: {target: stored} if target in ids else {})
    assert stats.from_store == 1 and "FROM THE HOOK" in orjson.dumps(out).decode()

    def slow(ids: list[str]) -> dict[str, Observation]:
        import time

        time.sleep(2)
        return {target: stored}

    out, stats = transform(messages, slow, TransformOptions(timeout_ms=50))
    assert stats.from_store == 0 and stats.built > 0 and "FROM THE HOOK" not in orjson.dumps(out).decode()


def test_observation_builders_keep_what_an_engineer_would() -> None:
    read = build_observation(
        "t1", "Read", {"file_path": "src/app.py"}, "     1→import os\n     2→def main():\n     3→class App:\n"
    )
    assert (
        "src/app.py" in read.text and "lines 1-3" in read.text and "main" in read.text and "App" in read.text
    )
    bash = build_observation(
        "t2",
        "Bash",
        {"command": "pytest -q"},
        "collected 3\nE   AssertionError: boom\nFAILED tests/test_a.py::test_x\n1 failed, 2 passed",
    )
    assert "pytest -q" in bash.text and "AssertionError: boom" in bash.text and "1 failed" in bash.text
    grep = build_observation("t3", "Grep", {"pattern": "def "}, "a.py:1:def x\na.py:5:def y\nb.py:2:def z")
    assert "3 lines in 2 files" in grep.text and "a.py:1,5" in grep.text and "b.py:2" in grep.text
    edit = build_observation(
        "t4",
        "Edit",
        {"file_path": "a.py", "old_string": "x\ny", "new_string": "z"},
        "The file a.py has been updated.",
    )
    assert edit.text == "Edited a.py: 1 edit(s), -2 +1 lines"
    err = build_observation(
        "t5", "Bash", {"command": "make"}, "make: *** No rule to make target", is_error=True
    )
    assert "No rule to make target" in err.text
    mcp = build_observation("t6", "mcp__github__search", {}, "\n".join(f"row {i}" for i in range(500)))
    assert mcp.text.startswith("mcp__github__search returned 500 lines") and "row 499" in mcp.text
    huge = build_observation("t7", "Task", {"description": "audit"}, "word " * 50_000, max_tokens=120)
    assert huge.tokens <= 120 and huge.original_tokens > 40_000
    secret = build_observation("t8", "Bash", {"command": "env"}, "ANTHROPIC_API_KEY=sk-ant-api03-" + "a" * 40)
    assert "sk-ant-api03-aaaa" not in secret.text
    odd = build_observation("t9", "Edit", {"edits": "not a list"}, "ok")  # odd shapes never raise
    assert odd.text


@pytest.mark.fixtures
def test_compress_writes_a_resumable_copy_that_differs_only_in_tool_results(tmp_path: Path) -> None:
    source = COMPACTED[0]
    before_hash = sha(source)
    out = tmp_path / "compressed.jsonl"
    report = compress(source, out)
    assert sha(source) == before_hash
    assert report.lines_changed > 20 and report.tool_tokens_after < report.tool_tokens_before
    old_lines = source.read_bytes().splitlines(keepends=True)
    new_lines = out.read_bytes().splitlines(keepends=True)
    assert len(old_lines) == len(new_lines)
    assert out.stat().st_size < source.stat().st_size
    changed = 0
    for old_raw, new_raw in zip(old_lines, new_lines, strict=True):
        if old_raw == new_raw:
            continue
        changed += 1
        old, new = orjson.loads(old_raw), orjson.loads(new_raw)
        assert old["uuid"] == new["uuid"] and old.get("parentUuid") == new.get("parentUuid")
        old_blocks, new_blocks = old["message"]["content"], new["message"]["content"]
        for a, b in zip(old_blocks, new_blocks, strict=True):
            if a != b:  # only a tool result's content changed
                assert a["type"] == b["type"] == "tool_result"
                assert {k: v for k, v in a.items() if k != "content"} == {
                    k: v for k, v in b.items() if k != "content"
                }
        assert {k: v for k, v in old.items() if k != "message"} == {
            k: v for k, v in new.items() if k != "message"
        }
    assert changed == report.lines_changed
    assert list(TranscriptReader(out)) and TranscriptReader(out).stats.malformed == 0
    # compressing the copy again changes nothing: replaced results are recognised
    again = compress(out, tmp_path / "twice.jsonl")
    assert again.lines_changed == 0


@pytest.mark.fixtures
def test_compress_refuses_to_overwrite_its_source(tmp_path: Path) -> None:
    from infinite_context_brain.core.errors import InvalidInput

    copy_of = tmp_path / "s.jsonl"
    copy_of.write_bytes((FIXTURES / "spotter" / "short.jsonl").read_bytes())
    with pytest.raises(InvalidInput, match="output"):
        compress(copy_of, copy_of)
    with pytest.raises(InvalidInput, match="source"):
        compress(tmp_path / "missing.jsonl", tmp_path / "o.jsonl")


@pytest.mark.fixtures
def test_expand_returns_the_original_and_reads_sidecar_files(tmp_path: Path) -> None:
    source = FIXTURES / "spotter" / "tool_heavy.jsonl"
    messages = messages_of(source)
    tid, original = next(
        (b["tool_use_id"], b["content"])
        for m in messages
        if m.get("type") == "user"
        for b in (m.get("message") or {}).get("content") or []  # type: ignore[union-attr]
        if isinstance(b, dict) and b.get("type") == "tool_result" and isinstance(b.get("content"), str)
    )
    got = expand(tid, source)
    assert got.text == original[:20_000] and got.tool_name
    sidecars = sorted(FIXTURES.rglob("tool-results/*.txt"))
    assert sidecars
    sidecar = sidecars[0]
    transcript = sidecar.parent.parent.with_suffix(".jsonl")
    full = expand(sidecar.stem, transcript)
    text = sidecar.read_text(encoding="utf-8", errors="replace")
    assert full.total_chars == len(text)
    pages = [full]
    while pages[-1].next_offset is not None:
        pages.append(expand(sidecar.stem, transcript, offset=pages[-1].next_offset))
    assert "".join(p.text for p in pages) == text
    from infinite_context_brain.core.errors import NotFound

    with pytest.raises(NotFound):
        expand("toolu_does_not_exist", source)


def test_live_transcript_is_the_newest_in_claude_codes_project_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "my.project_x"
    project.mkdir()
    config = tmp_path / "claude-config"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(config))
    assert live_transcript(project) is None
    folder = config / "projects" / project_slug(project)
    assert folder.name == str(project).replace("/", "-").replace(".", "-").replace("_", "-")
    folder.mkdir(parents=True)
    older, newer = folder / "a.jsonl", folder / "b.jsonl"
    older.write_text("{}\n")
    newer.write_text("{}\n")
    import os

    os.utime(older, (1, 1))
    assert live_transcript(project) == newer


@pytest.mark.fixtures
def test_digest_facts_from_a_window_reach_the_brain(tmp_path: Path) -> None:
    from infinite_context_brain.core.brain import ProjectBrain
    from infinite_context_brain.core.config import load_settings
    from infinite_context_brain.core.transcript.digest import windows

    path = FIXTURES / "claude-reliability" / "coverage-test-fix" / "transcript.jsonl"
    found = list(windows(path, every=20))
    assert len(found) == 1
    facts = found[0]
    assert facts.requests[-1].startswith("Add a function called multiply_numbers")
    assert "src/math_utils.py" in facts.files_edited and all(
        not f.startswith("/") for f in facts.files_edited
    )
    assert "toolu_" not in facts.model_dump_json()  # no tool output, only its gist

    settings = load_settings(
        store_url=f"sqlite:///{tmp_path / 'b.db'}", project_root=tmp_path, merge="offline"
    )
    with ProjectBrain.open(settings=settings) as brain:
        brain.checkpoint(facts=facts)
        state = brain.resume().state
    assert state is not None
    assert state.active_context.current_task.startswith("Add a function called multiply_numbers")
    assert "src/math_utils.py" in state.active_context.active_files  # named though not on disk here
