"""The hand-off stores an observation for every tool use of the transcript that has none (the
PostToolUse hook never reached us), keeps the ones the hook stored, and does each once."""

from __future__ import annotations

from pathlib import Path

import pytest

from infinite_context_brain.core.brain import ProjectBrain
from infinite_context_brain.core.config import load_settings
from infinite_context_brain.core.transcript.handoff import (
    checkpoint_from_transcript,
    observation,
    tool_calls_in,
)
from infinite_context_brain.core.transcript.reader import TranscriptReader

from ..conftest import FIXTURES

pytestmark = pytest.mark.fixtures  # real Claude Code transcripts

SMALL = FIXTURES / "claude-reliability" / "coverage-test-fix" / "transcript.jsonl"


def test_missing_observations_come_from_the_transcript_once(tmp_path: Path, store_url: str) -> None:
    project = tmp_path / "project"
    project.mkdir()
    transcript = tmp_path / "t.jsonl"
    transcript.write_bytes(SMALL.read_bytes())
    settings = load_settings(store_url=store_url, data_dir=tmp_path / "data", merge="offline")
    calls = tool_calls_in(list(TranscriptReader(transcript)))
    expected = [observation(use, res, settings.observation_max_tokens) for use, res in calls]
    assert len(expected) >= 3
    first = expected[0]
    with ProjectBrain.open(project, settings) as brain:
        hooked = brain.observe(
            {"tool_use_id": first.tool_use_id, "tool_name": first.tool_name, "tool_response": "from the hook"}
        )
        done = checkpoint_from_transcript(brain, transcript, "test")
        assert done.backfilled == len(expected) - 1
        stored = brain.store.observations.get_observations(
            brain.session_id, [o.tool_use_id for o in expected]
        )
        assert set(stored) == {o.tool_use_id for o in expected}
        assert stored[first.tool_use_id].text == hooked.text  # the hook's own is kept
        assert {stored[o.tool_use_id].source for o in expected[1:]} == {"transcript"}
        again = checkpoint_from_transcript(brain, transcript, "test")
        assert again.backfilled == 0 and again.checkpoint is None


def test_a_hand_off_repeated_after_a_crash_stores_nothing_twice(tmp_path: Path, store_url: str) -> None:
    """The hand-off's offset is written with its version: a worker killed after storing the version
    but before writing its cursor file (here: the cursor file removed) repeats the hand-off, which
    finds the stretch handed off already and stores nothing; new lines are handed off as usual."""
    from infinite_context_brain.core.transcript.handoff import cursor_path

    project = tmp_path / "project"
    project.mkdir()
    lines = SMALL.read_bytes().splitlines(keepends=True)
    transcript = tmp_path / "t.jsonl"
    transcript.write_bytes(b"".join(lines[: len(lines) // 2]))
    settings = load_settings(store_url=store_url, data_dir=tmp_path / "data", merge="offline")
    with ProjectBrain.open(project, settings) as brain:
        first = checkpoint_from_transcript(brain, transcript, "test")
        assert first.checkpoint is not None
        cursor_path(settings.resolved_data_dir(), transcript).unlink()  # the crash: no cursor written
        again = checkpoint_from_transcript(brain, transcript, "test")
        assert again.checkpoint is None and again.from_offset == first.to_offset
        assert brain.store.states.current_version(brain.session_id) == first.checkpoint.version
        transcript.write_bytes(b"".join(lines))
        later = checkpoint_from_transcript(brain, transcript, "test")
        assert later.from_offset == first.to_offset
        assert later.checkpoint is not None and later.checkpoint.version == first.checkpoint.version + 1
