"""``expand`` takes tool-use ids only and reads only inside the transcript's own folder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from infinite_context_brain.core.errors import InvalidInput, NotFound
from infinite_context_brain.core.transcript.service import expand


def _transcript(tmp_path: Path) -> Path:
    path = tmp_path / "s1.jsonl"
    lines = [
        {
            "type": "assistant",
            "message": {
                "id": "m",
                "content": [{"type": "tool_use", "id": "toolu_01A", "name": "Bash", "input": {}}],
            },
        },
        {
            "type": "user",
            "message": {"content": [{"type": "tool_result", "tool_use_id": "toolu_01A", "content": "short"}]},
        },
    ]
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return path


@pytest.mark.parametrize(
    "bad", ["../../etc/passwd", "/etc/passwd", "..", "toolu_01A/../x", "a b", "x" * 129, "toolu.01", "\x00"]
)
def test_refuses_what_is_not_a_tool_use_id(tmp_path: Path, bad: str) -> None:
    (tmp_path / "secret.txt").write_text("top secret")
    with pytest.raises(InvalidInput) as err:
        expand(bad, _transcript(tmp_path))
    assert err.value.field == "tool_use_id" and "toolu_" in str(err.value.fix)


def test_reads_the_sidecar_but_not_through_a_symlink(tmp_path: Path) -> None:
    path = _transcript(tmp_path)
    folder = path.with_suffix("") / "tool-results"
    folder.mkdir(parents=True)
    (folder / "toolu_01A.txt").write_text("the full output")
    assert expand("toolu_01A", path).text == "the full output"
    outside = tmp_path / "outside.txt"
    outside.write_text("not yours")
    (folder / "toolu_02B.txt").symlink_to(outside)
    with pytest.raises(NotFound):
        expand("toolu_02B", path)
    (folder / "toolu_01A.txt").unlink()
    (folder / "toolu_01A.txt").symlink_to(outside)
    assert expand("toolu_01A", path).text == "short"  # the transcript's own copy, not the link
