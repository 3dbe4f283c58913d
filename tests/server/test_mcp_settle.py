"""The MCP server writes the postings a store deferred (``memory_settle``) once it has replied and
no request is coming in, and before it exits; with the real MCP client and a real SQLite file."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

from .test_mcp_e2e import mcp_session, text_of


def _pending(path: Path) -> int:
    conn = sqlite3.connect(path)
    try:
        return int(
            conn.execute("SELECT COUNT(*) FROM memory_items WHERE pending_terms IS NOT NULL").fetchone()[0]
        )
    finally:
        conn.close()


async def test_the_server_settles_when_idle_after_a_reply_and_before_it_exits(
    project_dir: Path, store_url: str
) -> None:
    path = Path(store_url.removeprefix("sqlite:///"))
    async with mcp_session(project_dir, store_url) as s:
        stored = await s.call_tool("store", {"content": "the quarterly ledger export runs on tenantBilling9"})
        assert not stored.is_error, text_of(stored)
        for _ in range(200):  # no further request: the idle settle writes the postings
            if _pending(path) == 0:
                break
            await asyncio.sleep(0.025)
        assert _pending(path) == 0
        found = await s.call_tool("query", {"query": "tenantBilling9"})
        assert [h["item"]["id"] for h in found.structured_content["items"]] == [
            stored.structured_content["id"]
        ]
        for n in range(3):  # back to back, then the client leaves at once
            await s.call_tool("store", {"content": f"note {n} about invoices"})
    assert _pending(path) == 0  # written before the server exited


def test_no_idle_work_once_the_wire_is_closed() -> None:
    """A reply schedules an idle check; once the wire closes (the client left) it must not fire:
    asyncio shuts its executor down as the server stops, and the check then logged
    "Executor shutdown has been called" (seen once in a benchmark run)."""
    import subprocess
    import sys
    import textwrap

    script = textwrap.dedent(
        """
        import asyncio
        from infinite_context_brain.server.mcp.stdio import IDLE_DELAY, pipe_streams

        ran = []

        async def main():
            async with pipe_streams(lambda until: ran.append("during")) as (lines, replies):
                async for line in lines:
                    await replies.write(line)
                    if line.startswith("two"):
                        break  # the client left right after this reply
                    await asyncio.sleep(IDLE_DELAY * 25)  # idle: the check runs
            ran.append("closed")
            await asyncio.sleep(IDLE_DELAY * 25)  # the check the last reply scheduled must not
            print(ran)

        asyncio.run(main())
        """
    )
    out = subprocess.run([sys.executable, "-c", script], input=b"one\ntwo\n", capture_output=True, timeout=60)
    assert out.returncode == 0, out.stderr.decode()
    assert out.stdout.decode().splitlines()[-1] == "['during', 'closed']", out.stdout.decode()
