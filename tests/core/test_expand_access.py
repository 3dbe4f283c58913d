"""What ``expand`` reads, and for whom: tool-use ids only, inside the transcript's own folder
(never through a symlink out of it); and the originals the live proxy kept only for the calling
project's Claude Code sessions and this user: another project, or another user of a shared store,
gets nothing."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from infinite_context_brain.core.config import load_settings
from infinite_context_brain.core.errors import InvalidInput, NotFound
from infinite_context_brain.core.models import Observation
from infinite_context_brain.core.storage import open_store
from infinite_context_brain.core.transcript.live import originals_session
from infinite_context_brain.core.transcript.locate import transcripts_dir
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


ORIGINAL = "the whole output\n" * 100


@pytest.fixture
def kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A store holding one original under session ``s-ours`` of this user and one under the
    same session of another user; Claude Code's folder with a transcript of ``s-ours`` for
    ``project`` (it no longer holds the result) and one of ``s-other`` for ``elsewhere``."""
    monkeypatch.setenv("INFINITE_CONTEXT_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude"))
    for name in ("INFINITE_CONTEXT_STORE_URL", "REDIS_URL"):
        monkeypatch.delenv(name, raising=False)
    with open_store(load_settings()) as store:
        for uid, tid in ((os.getuid(), "toolu_ours"), (os.getuid() + 1, "toolu_theirs")):
            original = Observation(
                tool_use_id=tid,
                tool_name="Bash",
                text=ORIGINAL,
                original_tokens=400,
                tokens=400,
                source="proxy:original",
            )
            store.observations.put_observations(originals_session(uid, "s-ours"), [original])
    for folder, session in (("project", "s-ours"), ("elsewhere", "s-other")):
        (tmp_path / folder).mkdir()
        where = transcripts_dir(tmp_path / folder, tmp_path / "claude")
        where.mkdir(parents=True)
        (where / f"{session}.jsonl").write_text('{"type":"summary","summary":"x"}\n')
    return tmp_path


def test_the_projects_own_session_reads_it(kept: Path) -> None:
    page = expand("toolu_ours", project_root=kept / "project")
    assert page.text == ORIGINAL[:20_000] and page.tool_name == "Bash"


def test_another_project_or_another_user_reads_nothing(kept: Path) -> None:
    with pytest.raises(NotFound):
        expand("toolu_ours", project_root=kept / "elsewhere")
    with pytest.raises(NotFound):  # kept under the same session, for another user of the store
        expand("toolu_theirs", project_root=kept / "project")
    (kept / "bare").mkdir()
    with pytest.raises(NotFound):  # no transcripts at all
        expand("toolu_ours", project_root=kept / "bare")
