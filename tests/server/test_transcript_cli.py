"""`infinite-context transcript ...`, the PostToolUse hook and the MCP `expand` / `context_meter`
tools on the real fixtures: the commands in this process (``main(argv)``), the hook as the real
process Claude Code starts, the MCP tools over stdio."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from infinite_context_brain.core.config import load_settings
from infinite_context_brain.core.models import Observation
from infinite_context_brain.core.storage import open_store
from infinite_context_brain.core.transcript.locate import project_slug

from ..conftest import FIXTURES, run_cli_process, settle_hooks
from ..conftest import run_cli as run
from ..helpers.mcp_client import mcp_session, text_of

SESSION = FIXTURES / "spotter" / "258c7280-ae70-4798-800f-63464d01a85d.jsonl"


def claude_home(tmp_path: Path, project: Path) -> Path:
    """A Claude Code config folder holding the fixture as the project's live transcript."""
    config = tmp_path / "claude-config"
    folder = config / "projects" / project_slug(project.resolve())
    folder.mkdir(parents=True)
    shutil.copy(SESSION, folder / SESSION.name)
    return config


@pytest.mark.fixtures
def test_stats_as_json_table_and_chart(store_url: str, tmp_path: Path, project_dir: Path) -> None:
    data = run(store_url, "--json", "transcript", "stats", str(SESSION))
    assert data.returncode == 0, data.stderr
    stats = json.loads(data.stdout)
    assert stats["context_tokens"] > 50_000 and stats["context_window"] == 200_000
    assert stats["compactions"][0]["pre_tokens"] == 167_094
    assert stats["tool_tokens_after"] < 0.2 * stats["tool_tokens_before"]
    assert {t["tool"] for t in stats["per_tool"]} >= {"Read", "Bash", "Edit"}
    assert len(stats["curve"]) > 100 and all(p["endless_tokens"] <= p["tokens"] for p in stats["curve"])

    table = run(store_url, "transcript", "stats", str(SESSION))
    assert table.returncode == 0 and b"Endless mode" in table.stdout and b"Read" in table.stdout

    for suffix in ("png", "svg"):
        chart = tmp_path / f"context.{suffix}"
        drawn = run(store_url, "transcript", "stats", str(SESSION), "--plot", str(chart))
        assert drawn.returncode == 0, drawn.stderr
        head = chart.read_bytes()[:200]
        assert head.startswith(b"\x89PNG") if suffix == "png" else b"<svg" in chart.read_bytes()[:2000]
    bad = run(store_url, "transcript", "stats", str(SESSION), "--plot", str(tmp_path / "chart.gif"))
    assert bad.returncode == 2 and b"plot" in bad.stderr and b".png" in bad.stderr

    # the project's live transcript, found through CLAUDE_CONFIG_DIR
    config = claude_home(tmp_path, project_dir)
    live = run(
        store_url,
        "--project",
        str(project_dir),
        "--json",
        "transcript",
        "stats",
        CLAUDE_CONFIG_DIR=str(config),
    )
    assert live.returncode == 0, live.stderr
    assert json.loads(live.stdout)["context_tokens"] == stats["context_tokens"]
    none = run(
        store_url, "--project", str(project_dir), "transcript", "stats", CLAUDE_CONFIG_DIR=str(tmp_path)
    )
    assert none.returncode == 3 and b"no Claude Code transcript" in none.stderr


@pytest.mark.fixtures
def test_compress_and_expand(store_url: str, tmp_path: Path) -> None:
    digest = hashlib.sha256(SESSION.read_bytes()).hexdigest()
    out = tmp_path / "forked.jsonl"
    done = run(store_url, "--json", "transcript", "compress", str(SESSION), "-o", str(out))
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["lines_changed"] > 20 and out.is_file()
    assert hashlib.sha256(SESSION.read_bytes()).hexdigest() == digest

    replaced = next(
        block
        for line in out.read_text().splitlines()
        for block in (json.loads(line).get("message") or {}).get("content") or []
        if isinstance(block, dict) and str(block.get("content", "")).startswith("[endless-mode")
    )
    tid = replaced["tool_use_id"]
    original = run(store_url, "transcript", "expand", tid, "--file", str(SESSION), "--all")
    assert original.returncode == 0 and len(original.stdout) > len(replaced["content"])
    missing = run(store_url, "transcript", "expand", "toolu_nope", "--file", str(SESSION))
    assert missing.returncode == 3 and b"toolu_nope" in missing.stderr
    same = run(store_url, "transcript", "compress", str(SESSION), "-o", str(SESSION))
    assert same.returncode == 2 and b"output" in same.stderr


@pytest.mark.parametrize(
    "content",
    ["# My project\n\nA README, not a transcript.\n", '{"name": "x", "version": 1}\n[1, 2]\nnull\n'],
    ids=["markdown", "other-json-lines"],
)
def test_what_is_not_a_transcript_is_refused(store_url: str, tmp_path: Path, content: str) -> None:
    other = tmp_path / "README.md"
    other.write_text(content)
    out = tmp_path / "copy.jsonl"
    for argv, named in (
        (("transcript", "stats", str(other)), "argument FILE:"),
        (("transcript", "compress", str(other), "-o", str(out)), "argument FILE:"),
        (("transcript", "expand", "toolu_01ABC", "--file", str(other)), "argument --file:"),
    ):
        done = run_cli_process(store_url, *argv)
        err = done.stderr.decode()
        assert done.returncode == 2 and done.stdout == b"", (argv, err)
        assert err.startswith(f"error: {named} {other} is not a Claude Code transcript"), err
        assert "fix: pass a session's .jsonl file" in err
    assert not out.exists()
    as_json = run(store_url, "--json", "transcript", "stats", str(other))
    assert as_json.returncode == 2 and json.loads(as_json.stdout)["error"] == "InvalidInput"
    empty = tmp_path / "new-session.jsonl"  # a session Claude Code has not written to yet
    empty.write_text("")
    assert run(store_url, "transcript", "stats", str(empty)).returncode == 0


def _observation(store_url: str, project: Path, tool_use_id: str) -> Observation | None:
    session = (project / ".claude_session_id").read_text().strip()
    with open_store(load_settings(store_url=store_url)) as store:
        return store.observations.get_observations(session, [tool_use_id]).get(tool_use_id)


@pytest.mark.fixtures
def test_post_tool_use_hook_stores_an_observation(store_url: str, project_dir: Path) -> None:
    payload = {
        "session_id": "abc",
        "transcript_path": str(SESSION),
        "cwd": str(project_dir),
        "hook_event_name": "PostToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": "pytest -q"},
        "tool_response": {
            "stdout": "E   AssertionError: boom\n1 failed, 2 passed",
            "stderr": "",
            "interrupted": False,
        },
        "tool_use_id": "toolu_01HOOK",
    }
    done = run_cli_process(store_url, "hook", "PostToolUse", stdin=json.dumps(payload).encode())
    assert done.returncode == 0 and done.stdout == b"", done.stderr
    settle_hooks()  # the hook queued it; the worker stores it
    stored = _observation(store_url, project_dir, "toolu_01HOOK")  # in the project Claude Code works in
    assert stored is not None and stored.tool_name == "Bash" and stored.source == "hook"
    assert "AssertionError: boom" in stored.text and "pytest -q" in stored.text


@pytest.mark.parametrize(
    "stdin",
    [b"", b"not json", b"[1, 2]", b'{"tool_name": "Bash"}', b'{"tool_use_id": "t", "tool_name": ""}'],
    ids=["empty", "garbage", "array", "no-id", "empty-name"],
)
def test_hook_never_fails_on_bad_stdin(store_url: str, stdin: bytes) -> None:
    done = run(store_url, "hook", "post-tool-use", stdin=stdin)
    assert done.returncode == 0 and done.stdout == b""
    assert b'"level":"error"' in done.stderr  # a log line says what was wrong


def test_hook_survives_a_broken_store_and_bad_settings(tmp_path: Path, project_dir: Path) -> None:
    payload = json.dumps({"tool_use_id": "t1", "tool_name": "Read", "cwd": str(project_dir)}).encode()
    blocked = tmp_path / "not-a-dir"
    blocked.write_text("x")
    broken = run(f"sqlite:///{blocked}/brain.db", "hook", "post-tool-use", stdin=payload)
    assert broken.returncode == 0 and broken.stdout == b""
    assert "kept for the next run" in settle_hooks()  # the worker logs it; the record waits
    bad = run(
        f"sqlite:///{tmp_path}/b.db",
        "hook",
        "post-tool-use",
        stdin=payload,
        INFINITE_CONTEXT_HISTORY_SIZE="x",
    )
    assert bad.returncode == 0 and bad.stdout == b""
    assert "history_size" in settle_hooks()
    unknown = run(f"sqlite:///{tmp_path}/b.db", "hook", "no-such-event", stdin=payload)
    assert unknown.returncode == 0 and b"unknown hook event" in unknown.stderr


@pytest.mark.fixtures
async def test_mcp_expand_and_context_meter(store_url: str, tmp_path: Path, project_dir: Path) -> None:
    config = claude_home(tmp_path, project_dir)
    async with mcp_session(project_dir, store_url, CLAUDE_CONFIG_DIR=str(config)) as s:
        tools = {t.name for t in (await s.list_tools()).tools}
        assert {"expand", "context_meter"} <= tools
        meter = await s.call_tool("context_meter", {})
        assert not meter.is_error, text_of(meter)
        assert meter.structured_content["context_window"] == 200_000
        assert meter.structured_content["context_tokens"] > 50_000 and "Context:" in text_of(meter)

        tid = next(
            block["tool_use_id"]
            for line in SESSION.read_text().splitlines()
            for block in (json.loads(line).get("message") or {}).get("content") or []
            if isinstance(block, dict)
            and block.get("type") == "tool_result"
            and len(str(block["content"])) > 21_000
        )
        first = await s.call_tool("expand", {"tool_use_id": tid})
        assert not first.is_error and first.structured_content["next_offset"] == 20_000
        assert "offset=20000" in text_of(first)
        second = await s.call_tool("expand", {"tool_use_id": tid, "offset": 20_000})
        assert second.structured_content["offset"] == 20_000

        missing = await s.call_tool("expand", {"tool_use_id": "toolu_missing"})
        assert missing.is_error and "toolu_missing" in text_of(missing)
        bad = await s.call_tool("expand", {"tool_use_id": ""})
        assert bad.is_error
        still = await s.call_tool("status", {})  # the server is still up
        assert not still.is_error
