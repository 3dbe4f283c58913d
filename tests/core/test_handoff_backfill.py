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
