"""The incremental context meter against a full read: real Claude Code transcripts appended in
chunks of random size (often mid-line, often mid-reply), compared after every chunk; and the cases
where the cursor must start over (file replaced, truncated, rewritten in place)."""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

from infinite_context_brain.core.transcript.meter import ContextMeter, IncrementalMeter, measure_entries
from infinite_context_brain.core.transcript.reader import TranscriptReader

from ..conftest import FIXTURES, PHANTOM, SPOTTER_LONG

pytestmark = pytest.mark.fixtures  # real Claude Code transcripts

TOOL_HEAVY = FIXTURES / "spotter" / "tool_heavy.jsonl"
SHORT = FIXTURES / "spotter" / "short.jsonl"


def full_read(path: Path) -> ContextMeter:
    """What a fresh read of the file gives (complete lines only, as the live meter reads)."""
    return measure_entries(TranscriptReader(path, complete_lines_only=True), str(path))


@pytest.mark.parametrize("fixture", [SPOTTER_LONG, PHANTOM, TOOL_HEAVY], ids=lambda p: p.stem[:12])
def test_appended_in_chunks_it_equals_a_full_read(fixture: Path, tmp_path: Path) -> None:
    data = fixture.read_bytes()
    live_path = tmp_path / "session.jsonl"
    live_path.write_bytes(b"")
    live = IncrementalMeter(live_path)
    assert live.update() is True  # a new file: the cursor starts
    assert live.meter() == full_read(live_path) and live.meter().context_tokens is None

    rng = random.Random(fixture.name)
    written = 0
    chunks = 0
    while written < len(data):
        size = rng.randint(1, max(2, 2 * len(data) // 40))
        with open(live_path, "ab") as handle:
            handle.write(data[written : written + size])
        written = min(len(data), written + size)
        chunks += 1
        complete = data.rfind(b"\n", 0, written) + 1
        before = live.cursor
        assert live.update() is (complete > before)  # True only when whole lines came in
        assert live.cursor == complete  # a partial last line waits for its newline
        assert live.meter() == full_read(live_path), f"differs after chunk {chunks} ({written} bytes)"

    assert chunks >= 20
    assert live.stats.lines == data.count(b"\n")  # every line read exactly once
    final = live.meter()
    assert final.context_tokens and final.by_category
    if fixture == SPOTTER_LONG:
        assert final.compactions  # running figures crossed a compact boundary
    assert live.update() is False  # nothing new: no read, nothing changed
    assert live.meter() == final


def test_a_replaced_truncated_or_rewritten_file_starts_over(tmp_path: Path) -> None:
    live_path = tmp_path / "session.jsonl"
    live_path.write_bytes(TOOL_HEAVY.read_bytes())
    live = IncrementalMeter(live_path)
    live.update()
    assert live.meter() == full_read(live_path)

    # truncated and shorter (same inode): start over
    short = SHORT.read_bytes()
    with open(live_path, "r+b") as handle:
        handle.truncate(0)
        handle.write(short)
    assert live.update() is True
    assert live.cursor == len(short) and live.meter() == full_read(live_path)

    # replaced by another, longer file (a new inode): start over
    other = tmp_path / "other.jsonl"
    other.write_bytes(TOOL_HEAVY.read_bytes())
    os.replace(other, live_path)
    assert live.update() is True
    assert live.meter() == full_read(live_path)

    # rewritten in place, longer, no line end just before the old cursor: start over
    cursor = live.cursor
    longer = PHANTOM.read_bytes()[: cursor * 2]
    assert longer[cursor - 1 : cursor] != b"\n"
    inode = live_path.stat().st_ino
    with open(live_path, "r+b") as handle:
        handle.write(longer)
    assert live_path.stat().st_ino == inode
    assert live.update() is True
    assert live.meter() == full_read(live_path)
