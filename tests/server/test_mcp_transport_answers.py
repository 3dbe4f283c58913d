"""Calls of the bounded tools answered by the stdio transport itself (``fast_calls``, issue 19):
the same replies as the SDK's request pipeline gives for the same requests, on two brains alike
but for what differs between two stores (item ids, times), and everything else still answered by
the SDK. Over real pipes, every other stdio test of the memory tools takes this path too."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import anyio
import pytest

from infinite_context_brain.core.brain import ProjectBrain
from infinite_context_brain.core.config import load_settings
from infinite_context_brain.server.mcp.app import build_server
from infinite_context_brain.server.mcp.fast_calls import FastCalls, enabled
from infinite_context_brain.server.mcp.holder import BrainHolder
from infinite_context_brain.server.mcp.memory_tools import BOUNDED
from infinite_context_brain.server.mcp.session_streams import session_streams
from infinite_context_brain.server.mcp.stdio import LineReader, LineWriter

from ..conftest import cli_env
from ..raw_stdio import start_mcp, tool_call


def call(name: str, arguments: Any = None, **params: Any) -> tuple[str, dict[str, Any]]:
    body: dict[str, Any] = {"name": name, **params}
    if arguments is not None:
        body["arguments"] = arguments
    return "tools/call", body


INITIALIZE = (
    "initialize",
    {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "claude-code", "version": "2.1"},  # its budget: 80,000 tokens
    },
)
#: (method, params, answered by the transport when it may)
SCRIPT: list[tuple[tuple[str, dict[str, Any]], bool]] = [
    (call("recall", {}), False),  # before initialize: the SDK refuses it
    (INITIALIZE, False),
    (call("recall", {}), True),
    (call("store", {"content": "We decided to go with tenantLedger7", "tags": ["Billing"]}), True),
    (call("store", {"content": "x", "importance": 50}), True),  # argument error, in the core's words
    (call("store"), True),  # no arguments at all: content is missing
    (call("query", {"query": "tenantLedger7", "full": True}), True),
    (call("pin", {"id": "no-such-id"}), True),  # the core's error
    (call("list", {}), True),
    (call("configure", {"budget": 5000}), True),
    (call("recall", {"limit": 5}), True),
    (call("forget", {"id": "<stored>"}), True),
    (call("status", {}), False),  # not a bounded tool
    (call("no_such_tool", {}), False),
    (call("store", {"content": "x"}, task={"ttl": 1000}), False),  # a task: the SDK's to handle
    (("tools/call", {"name": 5}), False),  # refused by the surface check, worded by the SDK
    (("ping", {}), False),
]
_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)?")
_ITEM_ID = re.compile(r"\b[0-9a-f]{12}\b")  # a new item's id


class Pipe:
    """Stands in for the stdout pipe's ``asyncio.StreamWriter``: the replies as written."""

    def __init__(self) -> None:
        self.replies: dict[Any, dict[str, Any]] = {}

    def write(self, data: bytes) -> None:
        for line in data.decode().splitlines():
            reply = json.loads(line)
            self.replies[reply.get("id")] = reply

    async def drain(self) -> None:
        return None


async def serve(project_dir: Path, store_url: str, fast: bool) -> tuple[list[str], int]:
    """Each request of SCRIPT in turn (the next once the last is answered) to a server over the
    session streams, answered by the SDK alone or with the transport's fast path; the replies as
    comparable text, and how many the transport answered."""
    settings = load_settings(store_url=store_url)
    holder = BrainHolder(lambda: ProjectBrain.open(project_dir, settings))
    app = build_server(holder)
    holder.get()  # open: bounded tools run on the loop, as once the warm-up is done
    lines, pipe = asyncio.StreamReader(), Pipe()
    faster = FastCalls(app, BOUNDED, lambda: holder.ready) if fast else None
    read, write = session_streams(LineReader(lines), LineWriter(pipe), faster)  # type: ignore[arg-type]
    stored = ""

    async def feed() -> None:
        nonlocal stored
        for n, ((method, params), _) in enumerate(SCRIPT):
            request = {"jsonrpc": "2.0", "id": n, "method": method, "params": params}
            lines.feed_data(json.dumps(request).replace("<stored>", stored).encode() + b"\n")
            with anyio.fail_after(30):
                while n not in pipe.replies:
                    await asyncio.sleep(0.001)
            if method == "initialize":
                lines.feed_data(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')
            structured = pipe.replies[n].get("result", {}).get("structuredContent") or {}
            stored = stored or structured.get("id", "")
        lines.feed_eof()

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(feed)
            await app._lowlevel_server.run(read, write, app._lowlevel_server.create_initialization_options())
    finally:
        holder.close()
    replies = [json.dumps(pipe.replies[n], sort_keys=True) for n in range(len(SCRIPT))]
    store = store_url.removeprefix("sqlite:///")  # named by status
    return [_ITEM_ID.sub("<id>", _TIME.sub("<time>", r.replace(store, "<store>"))) for r in replies], (
        faster.answered if faster else 0
    )


async def test_the_transport_answers_bounded_calls_as_the_sdk_does(tmp_path: Path, project_dir: Path) -> None:
    by_sdk, none = await serve(project_dir, f"sqlite:///{tmp_path / 'sdk.db'}", fast=False)
    by_transport, answered = await serve(project_dir, f"sqlite:///{tmp_path / 'fast.db'}", fast=True)
    assert none == 0
    assert answered == sum(taken for _, taken in SCRIPT)  # the fast path did answer those
    for (request, _), sdk, transport in zip(SCRIPT, by_sdk, by_transport, strict=True):
        assert transport == sdk, request
    replies = [json.loads(r) for r in by_transport]
    assert replies[0]["error"]["code"] == -32602  # not initialized yet
    assert replies[2]["result"]["structuredContent"]["budget"]["budget"] == 80_000  # client: claude-code
    assert "importance: must be <= 10 (got 50)" in replies[4]["result"]["content"][0]["text"]
    assert replies[4]["result"]["isError"] and replies[7]["result"]["isError"]
    assert replies[6]["result"]["structuredContent"]["items"][0]["item"]["id"] == "<id>"
    assert "error" in replies[15]  # the surface check's error, from the SDK


def test_the_fast_path_is_off_when_middleware_would_see_calls() -> None:
    """A tracer provider keeps the SDK's OpenTelemetry middleware (its spans must see every call);
    only the SDK's request-state boundary, a no-op for these calls, lets the transport answer."""
    from mcp.server._otel import OpenTelemetryMiddleware

    server = build_server(BrainHolder(lambda: None))._lowlevel_server  # type: ignore[arg-type,return-value]
    kinds = {type(m) for m in server.middleware}
    assert OpenTelemetryMiddleware in kinds and not enabled(server)
    server.middleware = [m for m in server.middleware if not isinstance(m, OpenTelemetryMiddleware)]
    assert enabled(server)

    async def watching(ctx: Any, call_next: Any) -> Any:  # an application's own middleware
        return await call_next(ctx)

    server.middleware.append(watching)
    assert not enabled(server)


@pytest.mark.parametrize("name", sorted(BOUNDED))
def test_bounded_tools_exist(name: str) -> None:
    app = build_server(BrainHolder(lambda: None))  # type: ignore[arg-type,return-value]
    assert app._tool_manager.get_tool(name) is not None


def test_a_real_server_over_pipes_answers_bounded_calls_itself(project_dir: Path, store_url: str) -> None:
    """The server process as Claude Code starts it: after initialize, stores and queries are
    answered by the transport (its debug log counts them), a bounded call of a non-bounded tool
    by the SDK, and both answers are right."""
    server = start_mcp(project_dir, cli_env(store_url, INFINITE_CONTEXT_LOG_LEVEL="DEBUG"))
    try:
        server.send(tool_call(1, "store", '{"content": "the ledger sync runs at 02:00 UTC"}'))
        stored = server.reply(1, 20)
        assert stored is not None and not stored["result"]["isError"], server.stderr()
        server.send(tool_call(2, "query", '{"query": "ledger sync"}'))
        found = server.reply(2, 20)
        assert found is not None, server.stderr()
        assert (
            found["result"]["structuredContent"]["items"][0]["item"]["id"]
            == stored["result"]["structuredContent"]["id"]
        )
        server.send(tool_call(3, "status", "{}"))
        status = server.reply(3, 20)
        assert status is not None and not status["result"]["isError"], server.stderr()
        assert server.proc.stdin is not None
        server.proc.stdin.close()  # input ends: the server stops and says what it answered
        assert server.proc.wait(30) == 0, server.stderr()
        assert "input ended: 2 tool calls answered by the transport" in server.stderr()
    finally:
        server.close()
