"""Reply texts shared by the CLI and the MCP tools: lines and previews squeeze only a prefix of
an item when that settles the answer (the same text as squeezing the whole item); a diff reads
field by field; a history row says what its version changed."""

from __future__ import annotations

import random
from datetime import UTC, datetime

from infinite_context_brain.core.changes import field_diffs
from infinite_context_brain.core.models import DiffResult, HistorySummary
from infinite_context_brain.server.text import DIFF_ITEM_CHARS, diff_text, history_text, squeeze


def squeeze_whole(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def test_squeeze_reads_a_prefix_with_the_same_result() -> None:
    rng = random.Random(19)
    alphabet = "ab xyz\n\t\u2003  "  # whitespace runs of every kind, some long
    for _ in range(20_000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 700)))
        for limit in (1, 2, 160, 200):
            assert squeeze(text, limit) == squeeze_whole(text, limit), (text, limit)
    assert squeeze(" " * 5_000 + "tail", 160) == "tail"


def test_a_diff_reads_field_by_field_with_a_journal_entry_by_its_first_words() -> None:
    """The reply text of ``diff`` (the CLI's text and the MCP tool's): a value as before -> after,
    one changed item on the field's line, several a line each, a long item by its first words."""
    entry = "Done: fixed the login bug. " + " ".join(f"word{i}" for i in range(40))
    before = {"meta": {"session_id": "s"}, "active_context": {"current_task": "A"}, "journal": []}
    after = {
        "meta": {"session_id": "s"},
        "active_context": {"current_task": "B", "next_steps": [{"text": "x", "origin": "plan"}, "y"]},
        "journal": [{"at": "2026-01-01T10:00:00Z", "text": entry, "origin": "cli"}],
    }
    result = DiffResult(
        from_version=1, to_version=2, changes=[], fields=field_diffs(before, after), unified=""
    )
    lines = diff_text(result).splitlines()
    assert lines[:5] == ["Version 1 -> 2:", "task: A -> B", "next steps:", "  + x", "  + y"]
    journal = lines[5]
    assert journal.startswith("journal: + Done: fixed the login bug. word0") and journal.endswith("…")
    assert len(journal) == len("journal: + ") + DIFF_ITEM_CHARS


def test_history_rows_say_what_changed() -> None:
    def row(version: int, changes: str | None) -> HistorySummary:
        return HistorySummary(
            version=version,
            timestamp=datetime(2026, 1, 2, 12, 2, tzinfo=UTC),
            merged_by="offline",
            merge_duration_ms=1.0,
            token_count=0,
            current_task="write the docs",
            first_line="write the docs",
            changes=changes,
        )

    text = history_text([row(7, "task: write the docs; next steps +2; journal +1"), row(6, ""), row(5, None)])
    assert text.splitlines() == [
        "v7 · 2026-01-02 12:02 · offline · task: write the docs; next steps +2; journal +1",
        "v6 · 2026-01-02 12:02 · offline · no change",
        "v5 · 2026-01-02 12:02 · offline · write the docs (the version before is no longer kept)",
    ]
