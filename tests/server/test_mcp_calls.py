"""Tool calls through the real MCP client over stdio: the first calls after `initialize`, argument
errors in the core's words, many calls at once, the client's name choosing the memory budget, and
the event loop answering while a store write waits on a locked SQLite file."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import subprocess
import time
from pathlib import Path

import anyio
from mcp.types import Implementation

from ..conftest import PYTHON, cli_env
from ..helpers.mcp_client import INIT, mcp_session, text_of


async def test_first_calls_right_after_initialize_answer_from_the_store(
    project_dir: Path, store_url: str
) -> None:
    async with mcp_session(project_dir, store_url) as s:
        stored = await s.call_tool("store", {"content": "the invoice cache lives in tenantLedger7"})
        assert not stored.is_error, text_of(stored)
        item_id = stored.structured_content["id"]
    # a new server on the same store: its first calls, sent the moment initialize returns, find
    # what the first one stored (the warm-up opened the same brain, nothing was lost or mixed)
    async with mcp_session(project_dir, store_url) as s:
        found = await s.call_tool("query", {"query": "tenantLedger7"})
        assert not found.is_error, text_of(found)
        assert [h["item"]["id"] for h in found.structured_content["items"]] == [item_id]
        recalled = await s.call_tool("recall", {})
        assert recalled.structured_content["budget"]["items"] == 1
    async with mcp_session(project_dir, store_url) as s:
        bad = await s.call_tool("store", {"content": "x", "importance": 50})  # the very first call
        assert bad.is_error
        assert text_of(bad).startswith("importance: must be <= 10 (got 50)"), text_of(bad)
        assert "Fix:" in text_of(bad)


async def test_argument_and_core_errors_name_the_field_and_the_fix(project_dir: Path, store_url: str) -> None:
    async with mcp_session(project_dir, store_url) as s:
        for name, args, head in [
            ("query", {"query": "x", "limit": 5000}, "limit: must be <= 100 (got 5000)"),
            ("recall", {"limit": "ten"}, "limit: "),
            ("store", {"content": "x", "pinned": "maybe"}, "pinned: "),
            ("store", {}, "content: is required"),
            ("list", {"offset": -1}, "offset: "),
            ("pin", {"id": "no-such-id"}, "Error executing tool pin: no memory item 'no-such-id'"),
            ("resume", {"max_tokens": 1}, "max_tokens: "),
        ]:
            bad = await s.call_tool(name, args)
            assert bad.is_error and text_of(bad).startswith(head), (name, text_of(bad))
            assert "Fix:" in text_of(bad), (name, text_of(bad))
        unknown = await s.call_tool("no_such_tool", {})
        assert unknown.is_error and "no_such_tool" in text_of(unknown)
        ok = await s.call_tool("store", {"content": "still up", "tags": ["after-errors"]})
        assert not ok.is_error and ok.structured_content["tags"] == ["after-errors"]


async def test_a_bad_setting_still_answers_initialize_and_names_itself_on_the_first_call(
    project_dir: Path, store_url: str
) -> None:
    async with mcp_session(project_dir, store_url, INFINITE_CONTEXT_RESUME_TOKENS="lots") as s:
        for name in ("recall", "status"):  # the warm-up failed; each call reports the setting
            bad = await s.call_tool(name, {})
            assert bad.is_error and "resume_tokens" in text_of(bad).lower(), text_of(bad)


async def test_concurrent_calls_all_answer_and_lose_nothing(project_dir: Path, store_url: str) -> None:
    """Requests sent together (stores, bulk writes, queries, a compaction), each in its own worker
    thread on one SQLite connection: every call answers, nothing lost."""
    async with mcp_session(project_dir, store_url) as s:
        calls = []
        for n in range(12):
            calls.append(s.call_tool("store", {"content": f"single fact {n} about widgetCache{n}"}))
            batch = [{"content": f"bulk fact {n}-{k} about ledgerSync{n}"} for k in range(20)]
            calls.append(s.call_tool("bulk_store", {"items": json.dumps(batch)}))
            calls.append(s.call_tool("query", {"query": f"widgetCache{n} ledgerSync{n}"}))
        calls.append(s.call_tool("compact", {}))
        results = await asyncio.gather(*calls)
        assert not [text_of(r) for r in results if r.is_error]
        recalled = await s.call_tool("recall", {})
        budget = recalled.structured_content["budget"]
        assert budget["items"] + budget["archived"] == 12 + 12 * 20
        found = await s.call_tool("query", {"query": "widgetCache7"})
        assert found.structured_content["items"][0]["item"]["preview"].startswith("single fact 7")


async def test_the_clients_name_chooses_the_memory_budget(project_dir: Path, store_url: str) -> None:
    claude = Implementation(name="claude-code", version="2.1")
    async with mcp_session(project_dir, store_url, client=claude) as s:
        recalled = await s.call_tool("recall", {})
        assert recalled.structured_content["budget"]["budget"] == 80_000


async def test_ping_is_answered_while_a_store_waits_for_the_sqlite_write_lock(
    project_dir: Path, store_url: str
) -> None:
    """Another process holds the SQLite write lock: a `store` waits for it (up to the busy
    timeout) in its worker thread, and the server keeps answering meanwhile."""
    async with mcp_session(project_dir, store_url) as s:
        first = await s.call_tool("store", {"content": "the brain is open and the file exists"})
        assert not first.is_error, text_of(first)
        writer = sqlite3.connect(store_url.removeprefix("sqlite:///"), isolation_level=None)
        try:
            writer.execute("BEGIN IMMEDIATE")  # the write lock, held
            async with anyio.create_task_group() as tasks:
                waiting: list[object] = []

                async def store() -> None:
                    waiting.append(await s.call_tool("store", {"content": "written once the lock is free"}))

                tasks.start_soon(store)
                await anyio.sleep(0.3)  # the store is in flight, blocked on the lock
                started = time.monotonic()
                with anyio.fail_after(2):
                    await s.send_ping()
                assert time.monotonic() - started < 2
                assert not waiting  # still waiting for the lock
                writer.execute("ROLLBACK")
        finally:
            writer.close()
        (done,) = waiting
        assert not done.is_error, text_of(done)  # type: ignore[attr-defined]


def test_a_file_as_stdin_is_served(project_dir: Path, store_url: str) -> None:
    """stdin a regular file, not a pipe: the handshake is answered and the server exits at its end."""
    requests = project_dir / "requests.jsonl"
    requests.write_text(json.dumps(INIT) + "\n")
    with requests.open("rb") as stdin:
        out = subprocess.run(
            [PYTHON, "-m", "infinite_context_brain.server", "mcp"],
            cwd=project_dir,
            env=cli_env(store_url),
            stdin=stdin,
            capture_output=True,
            timeout=60,
        )
    assert out.returncode == 0 and b"Traceback" not in out.stderr, out.stderr.decode()
    reply = json.loads(out.stdout.decode().splitlines()[0])
    assert reply["result"]["serverInfo"]["name"] == "infinite-context"
