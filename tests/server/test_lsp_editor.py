"""What the editor's status item and documents get from the language server: the tooltip as
Markdown rendered once on the server (user text escaped by ``core.markdown``, the brain's size and
time as ``status`` gives them), a rollback's new time everywhere, the working-memory count kept
live when another process stores, and documents ready for a Markdown preview."""

from __future__ import annotations

import subprocess
from collections.abc import AsyncIterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest_asyncio
from lsprotocol import types
from pytest_lsp import ClientServerConfig

from infinite_context_brain.core.clock import shown_time
from infinite_context_brain.server.lsp.tooltip import proxy_tooltip

from ..conftest import PYTHON, cli_env
from ..helpers.lsp_client import SERVER, Session, plain

CLI = [PYTHON, "-m", "infinite_context_brain.server"]


def _time(iso: str) -> datetime:
    return datetime.fromisoformat(iso.replace("Z", "+00:00"))


async def test_tooltip_size_and_time_agree_with_status_and_history_after_a_rollback(
    lsp: Session,
) -> None:
    alpha, _beta = lsp.folders
    a = alpha.as_uri()
    task = "Current task: parse List<T> and __init__.py"
    await lsp.request("checkpoint", {"folderUri": a, "context": task})
    await lsp.request("checkpoint", {"folderUri": a, "context": "Done: it. Current task: ship it"})
    rolled = plain(await lsp.request("rollback", {"folderUri": a, "version": 1}))
    assert rolled["version"] == 3
    status = plain(await lsp.request("status", {"folderUri": a}))
    history = plain(await lsp.request("history", {"folderUri": a}))["items"]
    pushed = await lsp.budget_where(lambda p: p["folderUri"] == a and p["version"] == 3)

    # the restored content is a new version: its time is the rollback's, in every view
    assert _time(status["last_checkpoint"]) == _time(history[0]["timestamp"])
    assert _time(pushed["lastCheckpoint"]) == _time(history[0]["timestamp"])
    assert _time(history[0]["timestamp"]) > _time(history[2]["timestamp"])
    resume = plain(await lsp.request("resume", {"folderUri": a}))["markdown"]
    assert shown_time(_time(history[0]["timestamp"])) in resume.splitlines()[0]

    # one brain size: the tooltip's is status's
    assert (pushed["stateTokens"], pushed["tokenCap"]) == (status["state_tokens"], status["token_cap"])
    tip = pushed["tooltip"]
    assert f"{status['state_tokens']:,} / {status['token_cap']:,} tokens" in tip
    assert f"v3 · saved {shown_time(_time(history[0]['timestamp']))}" in tip
    assert "merged by rollback:v1" in tip
    # user text escaped once, by the shared rules (nothing else in the tooltip is)
    assert "parse List\\<T> and \\_\\_init\\_\\_.py" in tip
    assert "**Infinite Context** · alpha" in tip


@pytest_asyncio.fixture
async def one_folder(tmp_path: Path, store_url: str) -> AsyncIterator[Session]:
    """The server with one workspace folder (``lsp`` has two)."""
    root = tmp_path / "alpha"
    root.mkdir()
    client = await ClientServerConfig(server_command=SERVER).start()
    budgets: list[dict[str, Any]] = []

    @client.feature("infiniteContext/budget")
    def on_budget(params: Any) -> None:
        budgets.append(plain(params))

    await client.initialize_session(
        types.InitializeParams(
            capabilities=types.ClientCapabilities(),
            workspace_folders=[types.WorkspaceFolder(uri=root.as_uri(), name=root.name)],
            initialization_options={"storeUrl": store_url, "budget": 50_000},
        )
    )
    yield Session(client, budgets, [root])
    await client.shutdown_session()


async def test_the_memory_count_follows_another_process_and_a_checkpoint(
    one_folder: Session, store_url: str
) -> None:
    await _memory_count_follows(one_folder, store_url)


async def test_the_memory_count_follows_another_process_with_two_folders_open(
    lsp: Session,
    store_url: str,
) -> None:
    await _memory_count_follows(lsp, store_url)


async def _memory_count_follows(lsp: Session, store_url: str) -> None:
    alpha = lsp.folders[0]
    a = alpha.as_uri()
    await lsp.budget_where(lambda p: p["folderUri"] == a)
    await lsp.request("checkpoint", {"folderUri": a, "context": "Current task: remember things"})
    await lsp.budget_where(lambda p: p["folderUri"] == a and p["version"] == 1)

    def store(text: str) -> None:
        done = subprocess.run(
            [*CLI, "--project", str(alpha), "memory", "store", "-m", text],
            env=cli_env(store_url),
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr

    # Claude Code's MCP server stores into working memory: the count moves without a checkpoint
    store("The parser keeps <T> generic; the lexer splits on camelCase and snake_case names.")
    first = await lsp.budget_where(lambda p: p["folderUri"] == a and (p["memoryTokens"] or 0) > 0, timeout=8)
    store("Second note: the release needs the changelog and a tag.")
    second = await lsp.budget_where(
        lambda p: p["folderUri"] == a and (p["memoryTokens"] or 0) > first["memoryTokens"], timeout=8
    )
    status = plain(await lsp.request("status", {"folderUri": a}))
    assert second["memoryTokens"] == status["memory"]["used"] and status["memory"]["items"] == 2
    # and a checkpoint's notification carries the same, current count
    await lsp.request("checkpoint", {"folderUri": a, "context": "Done: the notes"})
    after: dict[str, Any] = await lsp.budget_where(lambda p: p["folderUri"] == a and p["version"] == 2)
    assert after["memoryTokens"] == second["memoryTokens"]


LIVE: dict[str, Any] = {
    "enabled": True,
    "running": True,
    "starting": False,
    "stopped": False,
    "url": "http://127.0.0.1:8419",
    "pid": 42,
    "upstream": "https://api.anthropic.com",
    "requests": 3,
    "transformed": 2,
    "epochs": 1,
    "tokensBefore": 40_000,
    "tokensAfter": 8_800,
    "savedTokens": 31_200,
    "savedShare": 0.78,
    "lastBefore": 24_000,
    "lastAfter": 3_000,
    "lastSavedTokens": 21_000,
    "lastSavedShare": 0.875,
    "lastOverheadMs": 4.2,
    "problem": None,
    "fix": None,
    "terminalEnv": {"ANTHROPIC_BASE_URL": "http://127.0.0.1:8419"},
}
IDLE = {**LIVE, "running": False, "url": None, "pid": None, "transformed": 0, "terminalEnv": {}}


def test_the_proxy_tooltip_gives_the_figures_the_routing_and_the_fix() -> None:
    tip = proxy_tooltip(LIVE)
    assert "Last request: tool results 24,000 → 3,000 tokens (-88%)" in tip
    assert "In total: 31,200 tokens saved, 40,000 → 8,800 (-78%)" in tip
    assert "2 of 3 requests transformed, 1 sweep(s), last overhead 4.2 ms" in tip
    assert "New integrated terminals: Claude Code goes through it" in tip
    assert "No request through it yet" in proxy_tooltip({**LIVE, "transformed": 0})
    failed = proxy_tooltip(
        {**IDLE, "problem": "the proxy exited at start <code 1>", "fix": "set infiniteContext.endless.port"}
    )
    assert "$(warning) the proxy exited at start \\<code 1>" in failed  # the shared escaping
    assert "Fix: set infiniteContext.endless.port" in failed and "Click to start the proxy" in failed
    assert "The live proxy is not running" not in failed  # said once, by the problem
    assert "- The live proxy is not running" in proxy_tooltip(IDLE)
    assert "Starting the live proxy" in proxy_tooltip({**IDLE, "starting": True})
    stopped = proxy_tooltip({**IDLE, "stopped": True})
    assert "- Stopped (Start Live Proxy" in stopped and "$(warning)" not in stopped
