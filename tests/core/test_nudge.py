"""When the Stop hook asks the model for a checkpoint (``core.transcript.nudge``), on copies of real
Claude Code transcripts with what a session adds after them: past the share of the window, once
between compactions, never while Claude Code already continues for a Stop hook."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from infinite_context_brain.core.transcript import nudge
from infinite_context_brain.core.transcript.leftover import hook_rule
from infinite_context_brain.server.claude_code.checkpoint_ask import for_event

from ..conftest import FIXTURES, PHANTOM

pytestmark = pytest.mark.fixtures

#: a session whose last answer had 153k tokens of context (of 200k)
FULL = PHANTOM
#: a short one: 25k
SHORT = FIXTURES / "spotter" / "short.jsonl"


def copy(source: Path, tmp_path: Path) -> Path:
    target = tmp_path / source.name
    shutil.copyfile(source, target)
    return target


def append(path: Path, *entries: dict[str, object]) -> None:
    with path.open("a") as f:
        for entry in entries:
            f.write(json.dumps(entry) + "\n")


def answer(
    tokens: int, model: str = "claude-opus-4-5-20251101", sidechain: bool = False
) -> dict[str, object]:
    usage = {"input_tokens": 10, "cache_read_input_tokens": tokens - 10, "output_tokens": 5}
    return {
        "type": "assistant",
        "isSidechain": sidechain,
        "message": {
            "role": "assistant",
            "model": model,
            "content": [{"type": "text", "text": "ok"}],
            "usage": usage,
        },
    }


def feedback(text: str) -> dict[str, object]:
    """A blocking Stop hook's reason, as Claude Code records it."""
    content = f"Stop hook feedback:\n[infinite-context hook stop]: {text}"
    return {"type": "user", "isMeta": True, "message": {"role": "user", "content": content}}


def test_past_the_share_the_model_is_asked_once_until_the_next_compaction(tmp_path: Path) -> None:
    path = copy(FULL, tmp_path)
    tokens, window = nudge.due(str(path), 0.6) or (0, 0)
    assert window == 200_000 and tokens > 0.6 * window
    output = for_event("Stop", {"transcript_path": str(path)}, 0.6, None, None)
    assert output is not None and output["decision"] == "block"
    reason = str(output["reason"])
    # after a tool call: context for the model's next step, the same request
    during = for_event("PostToolUse", {"transcript_path": str(path)}, 0.6, None, None) or {}
    context = during["hookSpecificOutput"]["additionalContext"]
    assert during["hookSpecificOutput"]["hookEventName"] == "PostToolUse" and context.startswith(nudge.MARK)
    assert context.endswith("then go on with the work.") and reason.endswith("then stop.")
    # the person is told it is no error (Claude Code shows a blocking Stop hook as one)
    assert "not an error" in output["systemMessage"] and "systemMessage" not in during
    assert (
        for_event("SessionStart", {"transcript_path": str(path)}, 0.6, None, None) is None
    )  # only those two
    assert reason.startswith(nudge.MARK) and f"{100 * tokens // window}% full" in reason
    assert "next_steps" in reason and "decisions" in reason  # the fields it asks for
    # Claude Code is already continuing for a Stop hook: never block again
    assert (
        for_event("Stop", {"transcript_path": str(path), "stop_hook_active": True}, 0.6, None, None) is None
    )
    assert (
        for_event("Stop", {"transcript_path": str(path), "stop_hook_active": "true"}, 0.6, None, None) is None
    )
    # asked: the reason is in the transcript now, and the next Stop lets it go
    append(path, feedback(reason), answer(tokens + 2_000))
    assert nudge.due(str(path), 0.6) is None
    # our own request is not a rule of the set-up (a blocking hook's feedback is)
    assert hook_rule(str(feedback(reason)["message"]["content"])) is None  # type: ignore[index]
    assert hook_rule("Stop hook feedback:\n[x]: Cannot exit with unstaged changes.") is not None
    # a compaction starts a new stretch: asked again once the context is past the share again
    append(path, {"type": "system", "subtype": "compact_boundary", "content": "Conversation compacted"})
    append(path, answer(30_000))
    assert nudge.due(str(path), 0.6) is None
    append(path, answer(130_000))
    assert nudge.due(str(path), 0.6) == (130_000, 200_000)


def test_a_checkpoint_the_model_made_by_itself_counts_as_asked(tmp_path: Path) -> None:
    path = copy(FULL, tmp_path)
    call = {"type": "tool_use", "id": "toolu_c1", "name": "mcp__infinite-context__checkpoint", "input": {}}
    append(path, {"type": "assistant", "message": {"role": "assistant", "content": [call]}}, answer(150_000))
    assert nudge.due(str(path), 0.6) is None


def test_below_the_share_off_or_without_usage_nobody_is_asked(tmp_path: Path) -> None:
    assert nudge.due(str(SHORT), 0.6) is None  # 25k of 200k
    assert nudge.due(str(FULL), 0) is None  # turned off
    assert nudge.due(str(FULL), 0.9) is None  # 153k is under 90%
    assert nudge.due(str(tmp_path / "gone.jsonl"), 0.6) is None
    assert for_event("Stop", {}, 0.6, None, None) is None
    path = copy(SHORT, tmp_path)
    append(path, answer(190_000, sidechain=True))  # a subagent's context is not the session's
    assert nudge.due(str(path), 0.6) is None
    append(path, answer(190_000, model="claude-sonnet-4-5[1m]"))  # a 1M window: 19%
    assert nudge.due(str(path), 0.6) is None
    assert nudge.due(str(path), 0.6, window=250_000) == (190_000, 250_000)  # the window set by hand


def test_the_last_answer_is_found_past_a_long_tail_and_a_line_being_written(tmp_path: Path) -> None:
    path = copy(SHORT, tmp_path)
    append(path, answer(150_000))
    big = {"type": "user", "message": {"role": "user", "content": "x" * (nudge.TAIL_BYTES // 2)}}
    append(path, big)
    with path.open("a") as f:
        f.write('{"type": "assistant", "message": {"usage": {"input_tok')  # not complete yet
    assert nudge.last_context(str(path)) == (150_000, "claude-opus-4-5-20251101")


def test_the_share_from_the_environment_names_the_variable_when_wrong(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(nudge.SHARE_VARIABLE, raising=False)
    assert nudge.share_from_environment() == nudge.DEFAULT_SHARE
    monkeypatch.setenv(nudge.SHARE_VARIABLE, "0.8")
    assert nudge.share_from_environment() == 0.8
    for wrong in ("lots", "1.5", "-0.1"):
        monkeypatch.setenv(nudge.SHARE_VARIABLE, wrong)
        with pytest.raises(nudge.NudgeSettingError, match=nudge.SHARE_VARIABLE):
            nudge.share_from_environment()


def test_an_ask_is_recorded_for_the_hook_that_comes_before_claude_code_writes_it(tmp_path: Path) -> None:
    """Claude Code writes the request into the transcript a moment after the hook answers; the
    record in the data folder keeps the next hook (a fast tool call) from asking again, until
    the next compaction."""
    path = copy(FULL, tmp_path)
    record = nudge.record_path(str(tmp_path / "data"), str(path))
    assert nudge.due(str(path), 0.6, record=record) is not None
    assert (Path(record).stat().st_mode & 0o777) == 0o600
    assert nudge.due(str(path), 0.6, record=record) is None  # the transcript says nothing yet
    append(path, answer(155_000))
    assert nudge.due(str(path), 0.6, record=record) is None
    append(path, {"type": "system", "subtype": "compact_boundary"}, answer(140_000))
    assert nudge.due(str(path), 0.6, record=record) is not None  # a new stretch
    assert nudge.due(str(path), 0.6, record=None) is not None  # without the record: the transcript only


def test_lines_that_are_no_entries_are_passed_over(tmp_path: Path) -> None:
    path = copy(SHORT, tmp_path)
    append(path, answer(150_000))
    with path.open("a") as f:
        f.write('["assistant", "usage"]\n"assistant usage"\n{"type": "assistant", "message": "usage"}\n')
    assert nudge.last_context(str(path)) == (150_000, "claude-opus-4-5-20251101")


def test_after_the_ask_a_hook_reads_only_what_came_since(tmp_path: Path) -> None:
    """Past the share every tool call asks whether to ask: once the ask is recorded, only the
    transcript since then is read (a whole 30 MB file per tool call would not do). A model that
    checkpointed by itself is recorded the same way."""
    path = copy(FULL, tmp_path)
    record = nudge.record_path(str(tmp_path / "data"), str(path))
    assert nudge.due(str(path), 0.6, record=record) is not None
    at = int(Path(record).read_text())
    assert at == path.stat().st_size
    # what lies before the record is not read again: a compaction written there would not count
    assert nudge.asked_since_compaction(str(path), at) is True
    append(path, answer(151_000))
    assert nudge.asked_since_compaction(str(path), at) is True
    # one after it does, and the stretch after it has no ask yet
    append(path, {"type": "system", "subtype": "compact_boundary"}, answer(130_000))
    assert nudge.asked_since_compaction(str(path), at) is False
    # the model checkpointed by itself: recorded, so the next hooks read little
    (tmp_path / "own").mkdir()
    own = copy(FULL, tmp_path / "own")  # a fresh copy, no record yet
    call = {"type": "tool_use", "id": "toolu_c2", "name": "mcp__infinite-context__checkpoint", "input": {}}
    append(own, {"type": "assistant", "message": {"role": "assistant", "content": [call]}}, answer(150_000))
    own_record = nudge.record_path(str(tmp_path / "data"), str(own))
    assert nudge.due(str(own), 0.6, record=own_record) is None
    assert int(Path(own_record).read_text()) == own.stat().st_size
