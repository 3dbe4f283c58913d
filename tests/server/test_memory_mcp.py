"""Working-memory tools over the real MCP client (stdio), bad input, and kill -9 durability."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

import pytest

from infinite_context_brain.core.config import load_settings
from infinite_context_brain.core.project import resolve_project
from infinite_context_brain.core.storage import open_store

from ..conftest import PYTHON, cli_env
from ..helpers.mcp_client import mcp_session, text_of

MEMORY_TOOLS = {
    "recall", "store", "query", "compact", "update", "pin", "unpin", "forget", "list", "bulk_store",
    "export", "configure",
}  # fmt: skip


async def test_every_memory_tool_over_stdio(project_dir: Path, store_url: str) -> None:
    async with mcp_session(project_dir, store_url) as s:
        assert {t.name for t in (await s.list_tools()).tools} >= MEMORY_TOOLS
        first = await s.call_tool("recall", {})
        assert not first.is_error and first.structured_content["budget"]["budget"] == 100_000  # client "mcp"

        stored = await s.call_tool(
            "store", {"content": "Error: redis refused the connection on port 6380", "importance": 9}
        )
        assert not stored.is_error, text_of(stored)
        error_id = stored.structured_content["id"]
        assert stored.structured_content["content_type"] == "error"
        bulk = await s.call_tool(
            "bulk_store",
            {
                "items": json.dumps(
                    [
                        {"content": "We decided to use parseHTTPResponse everywhere", "tags": ["http"]},
                        {"content": "notes on the deploy of api.py to kubernetes", "summary": "deploy notes"},
                    ]
                )
            },
        )
        assert not bulk.is_error and len(bulk.structured_content["items"]) == 2
        http_id = bulk.structured_content["items"][0]["id"]

        found = await s.call_tool("query", {"query": "http response"})
        assert found.structured_content["items"][0]["item"]["id"] == http_id
        assert (await s.call_tool("pin", {"id": error_id})).structured_content["pinned"] is True
        assert (await s.call_tool("unpin", {"id": error_id})).structured_content["pinned"] is False
        updated = await s.call_tool(
            "update", {"id": http_id, "summary": "use parseHTTPResponse", "importance": 7}
        )
        assert updated.structured_content["importance"] == 7
        listed = await s.call_tool("list", {"limit": 2})
        assert len(listed.structured_content["items"]) == 2
        configured = await s.call_tool("configure", {"budget": 2000, "auto_compact": False})
        assert configured.structured_content["budget"] == 2000
        compacted = await s.call_tool("compact", {"target": 5})
        assert not compacted.is_error and compacted.structured_content["after_tokens"] <= 5
        archived = await s.call_tool("query", {"query": "deploy kubernetes", "archived": True})
        assert archived.structured_content["items"], text_of(archived)
        exported = await s.call_tool("export", {"summaries_only": True})
        assert len(exported.structured_content["items"]) == 3
        assert not (await s.call_tool("forget", {"id": error_id})).is_error

        status = await s.call_tool("status", {})
        assert status.structured_content["memory"]["budget"] == 2000  # one status for both designs

        # bad input: clear tool errors, the server stays up
        for name, args, words in [
            ("store", {"content": "x", "importance": 11}, "importance"),
            ("update", {"id": "no-such-id", "summary": "x"}, "no-such-id"),
            ("forget", {"id": "no-such-id"}, "no-such-id"),
            ("bulk_store", {"items": "[{not json"}, "not valid JSON"),
            ("bulk_store", {"items": '[{"content": "ok"}, {"importance": 3}]'}, "items[1].content"),
            ("query", {"query": ""}, "query"),
        ]:
            bad = await s.call_tool(name, args)
            assert bad.is_error and words in text_of(bad), (name, text_of(bad))
        assert not (await s.call_tool("recall", {})).is_error


def _rpc(proc: subprocess.Popen[bytes], message: dict[str, object]) -> dict[str, object] | None:
    assert proc.stdin and proc.stdout
    proc.stdin.write((json.dumps(message) + "\n").encode())
    proc.stdin.flush()
    if "id" not in message:
        return None
    while True:
        reply = json.loads(proc.stdout.readline())
        if reply.get("id") == message["id"]:
            return reply  # type: ignore[no-any-return]


@pytest.mark.slow
def test_kill_9_right_after_store_returns_keeps_the_item(project_dir: Path, store_url: str) -> None:
    session = resolve_project(project_dir).session_id
    for round_ in range(5):
        proc = subprocess.Popen(
            [PYTHON, "-m", "infinite_context_brain.server", "mcp"],
            cwd=project_dir,
            env=cli_env(store_url),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        init = {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "0"},
        }
        _rpc(proc, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init})
        _rpc(proc, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        reply = _rpc(
            proc,
            {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "tools/call",
                "params": {"name": "store", "arguments": {"content": f"durable fact number {round_}"}},
            },
        )
        os.kill(proc.pid, signal.SIGKILL)  # right after the reply: no clean shutdown
        proc.wait()
        assert reply is not None and not reply["result"].get("isError"), reply  # type: ignore[union-attr]
        item_id = reply["result"]["structuredContent"]["id"]  # type: ignore[index]
        with open_store(load_settings(store_url=store_url)) as store:
            assert item_id in store.memory.memory_get(session, [item_id])
