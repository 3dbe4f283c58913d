"""The MCP server's fast path (issue 19): the brain opened in the background as serving starts,
bounded tools run on the event loop, stdio served without worker threads; each checked for the
same answers and errors as before, with the real MCP client or raw JSON-RPC over real pipes (and
a regular file)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from ..conftest import PYTHON, cli_env
from .test_mcp_e2e import mcp_session, text_of

INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "0"},
    },
}


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


async def test_inline_tools_keep_the_field_naming_errors(project_dir: Path, store_url: str) -> None:
    async with mcp_session(project_dir, store_url) as s:
        await s.call_tool("status", {})  # the brain is open: these run on the event loop
        for name, args, head in [
            ("query", {"query": "x", "limit": 5000}, "limit: must be <= "),
            ("recall", {"limit": "ten"}, "limit: "),
            ("store", {"content": "x", "pinned": "maybe"}, "pinned: "),
            ("list", {"offset": -1}, "offset: "),
            ("pin", {"id": "no-such-id"}, "Error executing tool pin: no memory item 'no-such-id'"),
            ("resume", {"max_tokens": 1}, "max_tokens: "),
        ]:
            bad = await s.call_tool(name, args)
            assert bad.is_error and text_of(bad).startswith(head), (name, text_of(bad))
            assert "Fix:" in text_of(bad), (name, text_of(bad))
        ok = await s.call_tool("store", {"content": "still up", "tags": ["after-errors"]})
        assert not ok.is_error and ok.structured_content["tags"] == ["after-errors"]


def test_a_file_as_stdin_is_served_by_the_sdk_transport(project_dir: Path, store_url: str) -> None:
    """Only pipes and sockets take the event-loop transport; a regular file (which the loop cannot
    poll) is served by the SDK's own threaded transport. (Requests still running when the input
    ends are dropped by the SDK, as before: only the handshake is asserted.)"""
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


def test_pipe_streams_keep_stray_output_off_the_wire_and_restore_the_descriptors() -> None:
    script = textwrap.dedent(
        """
        import asyncio, os, sys
        from infinite_context_brain.server.mcp.stdio import fast_fds, pipe_streams

        async def main():
            assert fast_fds()
            async with pipe_streams() as (lines, replies):
                print("stray print", flush=True)  # fd 1 is stderr meanwhile
                os.system("echo stray child")      # and so for a child process
                async for line in lines:
                    await replies.write(line.upper())
                    await replies.flush()
            print("after", flush=True)  # fd 1 is the pipe again

        asyncio.run(main())
        """
    )
    big = "x" * 300_000  # more than a pipe holds: the write waits for the reader
    out = subprocess.run(
        [sys.executable, "-c", script],
        input=b'{"a": 1}\n' + big.encode() + b"\n\xff tail without newline",  # a byte that is not UTF-8
        capture_output=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr.decode()
    assert out.stdout.decode("utf-8").split("\n") == [
        '{"A": 1}',
        big.upper(),
        "\ufffd TAIL WITHOUT NEWLINE" + "after",
        "",
    ]
    assert b"stray print" in out.stderr and b"stray child" in out.stderr


async def test_a_bad_setting_still_answers_initialize_and_names_itself_on_the_first_call(
    project_dir: Path, store_url: str
) -> None:
    async with mcp_session(project_dir, store_url, INFINITE_CONTEXT_RESUME_TOKENS="lots") as s:
        for name in ("recall", "status"):  # the warm-up failed; each call reports the setting
            bad = await s.call_tool(name, {})
            assert bad.is_error and "resume_tokens" in text_of(bad).lower(), text_of(bad)


async def test_concurrent_calls_mixing_inline_and_threaded_tools(project_dir: Path, store_url: str) -> None:
    """Requests sent together: bulk writes and compaction run in worker threads while stores and
    queries run on the event loop, all on one SQLite connection; every call answers, nothing lost."""
    async with mcp_session(project_dir, store_url) as s:
        await s.call_tool("status", {})
        calls = []
        for n in range(12):
            calls.append(s.call_tool("store", {"content": f"inline fact {n} about widgetCache{n}"}))
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
        assert found.structured_content["items"][0]["item"]["preview"].startswith("inline fact 7")


def test_the_sdk_tracing_middleware_goes_only_when_no_tracer_provider_is_installed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Its spans cost ~10 µs a call and go nowhere without a provider; with one, they stay."""
    from mcp.server._otel import OpenTelemetryMiddleware
    from opentelemetry import trace

    from infinite_context_brain.server.mcp.app import _drop_idle_tracing, build_server
    from infinite_context_brain.server.mcp.holder import BrainHolder

    def traced() -> list[object]:
        server = build_server(BrainHolder(lambda: None))  # type: ignore[arg-type,return-value]
        _drop_idle_tracing(server._lowlevel_server)
        return [m for m in server._lowlevel_server.middleware if isinstance(m, OpenTelemetryMiddleware)]

    assert traced() == []

    class Installed(trace.TracerProvider):  # what opentelemetry-instrument would have set
        def get_tracer(self, *args: object, **kwargs: object) -> trace.Tracer:
            return trace.NoOpTracer()

    monkeypatch.setattr(trace, "get_tracer_provider", Installed)
    assert len(traced()) == 1
