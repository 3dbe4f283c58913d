"""The language server over stdio with pytest-lsp: every custom request, the budget notification
(including one caused by another process's write, and one from the live transcript while the store
is frozen), bad params, two workspace folders."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pytest_lsp import ClientServerConfig

from infinite_context_brain.core.transcript.locate import project_slug

from ..conftest import FIXTURES, PYTHON, cli_env
from ..helpers.lsp_client import SERVER, Session, plain
from ..helpers.redis_servers import RedisServer, free_port


async def test_requests_notifications_and_two_folders(lsp: Session, store_url: str) -> None:
    alpha, beta = lsp.folders
    a, b = alpha.as_uri(), beta.as_uri()
    start = await lsp.budget_where(lambda p: p["folderUri"] == a)
    assert start["version"] == 0 and start["memoryBudget"] == 50_000
    await lsp.budget_where(lambda p: p["folderUri"] == b)
    # Opening a folder writes nothing into it: the id file comes with the first checkpoint.
    assert not (alpha / ".claude_session_id").exists() and not (beta / ".claude_session_id").exists()

    done = await lsp.request("checkpoint", {"folderUri": a, "context": "Current task: login in src/app.py"})
    assert plain(done)["version"] == 1
    reports = [[type(r).__name__ for r in rs] for rs in lsp.client.progress_reports.values()]
    assert ["WorkDoneProgressBegin", "WorkDoneProgressEnd"] in reports  # $/progress around the merge
    await lsp.budget_where(lambda p: p["folderUri"] == a and p["version"] == 1)
    await lsp.request(
        "checkpoint", {"folderUri": a, "context": "Done: login. Current task: logout", "tokenCount": 900}
    )
    resumed = plain(await lsp.request("resume", {"folderUri": a, "maxTokens": 500}))
    assert "logout" in resumed["markdown"] and resumed["state"]["meta"]["version"] == 2
    status = plain(await lsp.request("status", {"folderUri": a}))
    assert status["version"] == 2 and status["memory"]["budget"] == 50_000
    pushed = await lsp.budget_where(lambda p: p["folderUri"] == a and p["version"] == 2)
    assert pushed["currentTask"] == status["current_task"] and "logout" in pushed["currentTask"]
    assert pushed["mergedBy"] == status["merged_by"] and pushed["lockHolder"] == status["lock_holder"]
    assert datetime.fromisoformat(pushed["lastCheckpoint"]) == datetime.fromisoformat(
        status["last_checkpoint"].replace("Z", "+00:00")
    )
    assert (pushed["memoryTokens"], pushed["memoryBudget"]) == (
        status["memory"]["used"],
        status["memory"]["budget"],
    )
    assert pushed["store"] == status["store"] and pushed["refining"] is None
    assert plain(await lsp.request("status", {"folderUri": b}))["version"] == 0  # its own session
    assert (alpha / ".claude_session_id").is_file() and not (beta / ".claude_session_id").exists()
    history = plain(await lsp.request("history", {"folderUri": a, "limit": 5}))
    assert [h["version"] for h in history["items"]] == [2, 1]
    diff = plain(await lsp.request("diff", {"folderUri": a, "from": 1, "to": 2}))
    assert diff["changes"]
    rolled = plain(await lsp.request("rollback", {"folderUri": a, "version": 1}))
    assert rolled == {"version": 3, "restored_from": 1, "merged_by": "rollback:v1"}
    installed = plain(await lsp.request("installClaudeCode", {"folderUri": b, "hooks": "mcp"}))
    assert installed["changes"] and (beta / ".mcp.json").is_file()
    assert installed["hooks"] == "mcp_tool hooks (asked for)"  # the CLI's rule, same words
    hooks = json.loads((beta / ".claude" / "settings.json").read_text())["hooks"]
    assert hooks["PostToolUse"][0]["hooks"][0]["type"] == "mcp_tool"

    # another process writes (as Claude Code's MCP server or the CLI would): pushed within 1 s
    cli = subprocess.run(
        [
            PYTHON,
            "-m",
            "infinite_context_brain.server",
            "--project",
            str(alpha),
            "checkpoint",
            "-m",
            "Done: from the CLI",
        ],
        env=cli_env(store_url),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert cli.returncode == 0, cli.stderr
    written = time.monotonic()
    await lsp.budget_where(lambda p: p["folderUri"] == a and p["version"] == 4, timeout=3)
    assert time.monotonic() - written < 1.5


BAD_PARAMS: list[tuple[str, dict[str, Any], str]] = [
    ("checkpoint", {"context": "x"}, "folderUri"),  # two folders open: which one?
    ("checkpoint", {"folderUri": "file:///nowhere", "context": "x"}, "not an open workspace folder"),
    ("checkpoint", {"folderUri": "FOLDER", "context": 42}, "context"),
    ("checkpoint", {"folderUri": "FOLDER", "context": ""}, "context"),
    ("rollback", {"folderUri": "FOLDER", "version": 99}, "version"),
    ("resume", {"folderUri": "FOLDER", "maxTokens": "many"}, "maxTokens"),
    ("diff", {"folderUri": "FOLDER", "from": 1}, "to: is required"),
    ("installClaudeCode", {"folderUri": "FOLDER", "scope": "galaxy"}, "scope"),
    ("installClaudeCode", {"folderUri": "FOLDER", "hooks": "grpc"}, "hooks"),
]


async def test_bad_params_are_json_rpc_errors(lsp: Session) -> None:
    """Every bad request on one server (one start instead of one per case): each is a JSON-RPC
    error naming the field, and the server keeps serving after each."""
    folder = lsp.folders[0].as_uri()
    for method, raw, words in BAD_PARAMS:
        params = {k: (folder if v == "FOLDER" else v) for k, v in raw.items()}
        with pytest.raises(JsonRpcException) as raised:
            await lsp.request(method, params)
        assert words in str(raised.value.message), (method, raw, raised.value.message)
        assert raised.value.code in (-32602, -32000, -32001, -32002, -32003, -32004, -32005), (method, raw)
        status = plain(await lsp.request("status", {"folderUri": folder}))  # still serving
        assert status["version"] == 0, (method, raw)


async def test_workspace_folders_come_and_go(lsp: Session, tmp_path: Path) -> None:
    gamma = tmp_path / "gamma"
    gamma.mkdir()
    lsp.client.workspace_did_change_workspace_folders(
        types.DidChangeWorkspaceFoldersParams(
            event=types.WorkspaceFoldersChangeEvent(
                added=[types.WorkspaceFolder(uri=gamma.as_uri(), name="gamma")],
                removed=[types.WorkspaceFolder(uri=lsp.folders[1].as_uri(), name="beta")],
            )
        )
    )
    await lsp.budget_where(lambda p: p["folderUri"] == gamma.as_uri())
    lsp.client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"infiniteContext": {"budget": 12_345}})
    )
    await lsp.budget_where(lambda p: p["folderUri"] == gamma.as_uri() and p["memoryBudget"] == 12_345)
    done = plain(await lsp.request("checkpoint", {"folderUri": gamma.as_uri(), "context": "Current task: g"}))
    assert done["version"] == 1
    with pytest.raises(JsonRpcException):
        await lsp.request("status", {"folderUri": lsp.folders[1].as_uri()})


def _live_transcript(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """A folder whose Claude Code session is live: a real transcript where Claude Code keeps it."""
    folder = tmp_path / "delta"
    folder.mkdir()
    config = tmp_path / "claude-config"
    live = config / "projects" / project_slug(folder.resolve()) / "session.jsonl"
    live.parent.mkdir(parents=True)
    shutil.copy(FIXTURES / "spotter" / "tool_heavy.jsonl", live)
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(config))
    return folder, live


def _append_reply(live: Path, cache_read: int) -> int:
    """Append an assistant reply as Claude Code writes it; the context it reports."""
    reply = {
        "type": "assistant",
        "uuid": f"new-{cache_read}",
        "isSidechain": False,
        "message": {
            "id": f"msg_new_{cache_read}",
            "model": "claude-opus-4-6",
            "content": [{"type": "text", "text": "done"}],
            "usage": {"input_tokens": 5, "cache_read_input_tokens": cache_read, "output_tokens": 9},
        },
    }
    with open(live, "a") as handle:
        handle.write(json.dumps(reply) + "\n")
    return cache_read + 5


async def _start(folder: Path, store_url: str) -> Session:
    client = await ClientServerConfig(server_command=SERVER).start()
    budgets: list[dict[str, Any]] = []
    client.feature("infiniteContext/budget")(lambda params: budgets.append(plain(params)))
    await client.initialize_session(
        types.InitializeParams(
            capabilities=types.ClientCapabilities(),
            workspace_folders=[types.WorkspaceFolder(uri=folder.as_uri(), name=folder.name)],
            initialization_options={"storeUrl": store_url},
        )
    )
    return Session(client, budgets)


@pytest.mark.fixtures
async def test_the_live_transcript_feeds_the_context_meter(
    tmp_path: Path, store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder, live = _live_transcript(tmp_path, monkeypatch)
    lsp = await _start(folder, store_url)
    try:
        first = await lsp.budget_where(lambda p: (p["contextTokens"] or 0) > 0)
        assert first["contextWindow"] == 200_000
        expected = _append_reply(live, 123_456)
        await lsp.budget_where(lambda p: p["contextTokens"] == expected, timeout=5)
        # the meter reads only what was appended, across many changes, and agrees with a full read
        from infinite_context_brain.core.transcript.meter import measure

        for n in range(3):
            expected = _append_reply(live, 130_000 + n)
            await lsp.budget_where(lambda p, e=expected: p["contextTokens"] == e, timeout=5)
        assert measure(live).context_tokens == expected
    finally:
        await lsp.client.shutdown_session()


@pytest.mark.fixtures
async def test_a_frozen_store_does_not_stall_the_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Redis frozen (SIGSTOP) while the transcript grows: the budget read waits in a worker thread,
    the server keeps answering at once, and the notification arrives when the store is back."""
    redis = RedisServer(free_port(), tmp_path / "redis", ["--appendonly", "no"])
    redis.start()
    assert redis.proc is not None
    pid = redis.proc.pid
    folder, live = _live_transcript(tmp_path, monkeypatch)
    lsp = await _start(folder, redis.url)
    try:
        await lsp.budget_where(lambda p: (p["contextTokens"] or 0) > 0, timeout=10)
        os.kill(pid, signal.SIGSTOP)
        # thawed well within the client's 3 s socket timeout: the waiting read then completes
        thaw = asyncio.get_running_loop().call_later(2.5, os.kill, pid, signal.SIGCONT)
        try:
            expected = _append_reply(live, 150_000)
            await asyncio.sleep(1.5)  # the watcher (1 s poll) has read it; the budget read is waiting
            started = time.monotonic()
            with pytest.raises(JsonRpcException):  # answered without the store
                await lsp.request("status", {"folderUri": "file:///nowhere"})
            answered = time.monotonic() - started
        finally:
            thaw.cancel()
            os.kill(pid, signal.SIGCONT)
        assert answered < 0.5, f"the server stalled {answered:.2f}s behind the frozen store"
        await lsp.budget_where(lambda p: p["contextTokens"] == expected, timeout=5)
    finally:
        await lsp.client.shutdown_session()
        redis.stop()
