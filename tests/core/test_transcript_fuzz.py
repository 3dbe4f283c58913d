"""The transcript readers never raise on a line of any shape: generated JSONL (valid JSON of
wrong types too: ``"message": "text"``, null, lists, numbers, huge ints) through the reader,
the meter, the transform, the stats, expand, the digest and the hand-off."""

# ruff: noqa: E501  (generator tables read best one per line)
from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from infinite_context_brain.core.brain import ProjectBrain
from infinite_context_brain.core.config import load_settings
from infinite_context_brain.core.errors import InfiniteContextError, InvalidInput
from infinite_context_brain.core.transcript.digest import digest
from infinite_context_brain.core.transcript.handoff import checkpoint_from_transcript
from infinite_context_brain.core.transcript.meter import measure
from infinite_context_brain.core.transcript.reader import TranscriptReader
from infinite_context_brain.core.transcript.service import ENTRY_TYPES, expand, transcript_stats
from infinite_context_brain.core.transcript.transform import transform

scalars = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(2**70), max_value=2**70), st.floats(allow_nan=False),
    st.text(max_size=20), st.sampled_from(["tool_use", "tool_result", "text", "thinking", "image", "toolu_1"]),
)  # fmt: skip
anything = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3), max_leaves=8)  # fmt: skip
KEYS = ["type", "message", "content", "id", "name", "input", "tool_use_id", "is_error", "usage", "uuid",
        "isSidechain", "toolUseResult", "subtype", "compactMetadata", "timestamp", "cwd", "text", "model",
        "attachment", "operation", "summary", "isCompactSummary", "input_tokens", "todos", "command"]  # fmt: skip
shaped = st.recursive(
    scalars | st.sampled_from(["user", "assistant", "system", "compact_boundary", "Bash", "TodoWrite"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(KEYS), inner, max_size=5),
    max_leaves=12,
)
line = st.one_of(
    shaped.map(json.dumps),
    anything.map(json.dumps),
    st.fixed_dictionaries(
        {"type": st.sampled_from(["user", "assistant", "system", "summary", "attachment"])},
        optional={k: shaped for k in KEYS if k != "type"},
    ).map(json.dumps),
    st.text(max_size=30),
)


def _write(tmp_path: Path, lines: list[str]) -> Path:
    path = tmp_path / "fuzz.jsonl"
    path.write_text("".join(x.replace("\n", " ") + "\n" for x in lines), encoding="utf-8", errors="replace")
    return path


@settings(
    max_examples=int(__import__("os").environ.get("FUZZ_EXAMPLES", "60")),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(st.lists(line, min_size=1, max_size=12))
@example(lines=['{"type": []}'])  # a type no set can hold
def test_no_line_makes_a_reader_raise(tmp_path: Path, lines: list[str]) -> None:
    path = _write(tmp_path, lines)
    entries = list(TranscriptReader(path))
    measure(path)
    digest(entries, [tmp_path])
    objects = [o for _n, _r, o in TranscriptReader(path).raw_lines() if o is not None]
    transform(objects)
    if any(isinstance(o.get("type"), str) and o["type"] in ENTRY_TYPES for o in objects) or not any(
        x.strip() for x in lines
    ):
        transcript_stats(path)
    else:  # not a Claude Code transcript: refused by name, not read as one with zero figures
        with pytest.raises(InvalidInput, match="not a Claude Code transcript"):
            transcript_stats(path)
    with contextlib.suppress(InfiniteContextError):  # NotFound is an answer, not a crash
        expand("toolu_1", path)


def test_the_hand_off_survives_odd_lines(tmp_path: Path, project_dir: Path) -> None:
    odd: list[Any] = [
        {"type": "user", "message": "a string"}, {"type": "user", "message": None},
        {"type": "assistant", "message": {"content": "text", "usage": "x"}},
        {"type": "assistant", "message": {"content": [{"type": "tool_use", "input": "x", "id": 5}], "usage": {"input_tokens": "9"}}},
        {"type": "user", "message": {"content": [{"type": "tool_result", "content": {"a": 1}, "tool_use_id": None}]}},
        {"type": "system", "subtype": "compact_boundary", "compactMetadata": "x"}, [1, 2], 2**80,
        {"type": "user", "message": {"content": [{"type": "text", "text": ["list"]}]}, "toolUseResult": "s"},
        {"type": "assistant", "message": {"id": [], "content": [{"type": "tool_use", "name": "TodoWrite", "input": {"todos": "x"}}]}},
    ]  # fmt: skip
    odd += [{"type": "assistant", "message": True}, {"type": "assistant", "message": "text"}]
    odd += [
        {
            "type": "assistant",
            "message": {"id": "z", "usage": {"input_tokens": "abc", "output_tokens": 1e308}},
        }
    ]
    odd += [
        {"type": "system", "subtype": "compact_boundary", "compactMetadata": {"preTokens": "x", "trigger": 5}}
    ]
    path = _write(tmp_path, [json.dumps(o) for o in odd])
    transcript_stats(path)
    settings_ = load_settings(store_url=f"sqlite:///{tmp_path / 'b.db'}")
    with ProjectBrain.open(project_dir, settings_) as brain:
        checkpoint_from_transcript(brain, path, "clear")
