"""Requests no client library would send, over real stdio to the real servers: each gets a
JSON-RPC error (or a tool error) naming the field and the fix within a second, never silence, a
traceback or a desynchronised stream; the server answers the next request normally.

Some of these the stock SDKs leave unanswered; our guards (``server/mcp/guard.py``,
``server/lsp/frames.py``) answer them. ``test_the_stock_*`` pin that SDK behaviour on a bare
server of each SDK: when one of them fails, the SDK answers such messages itself, and its guard
can go."""

from __future__ import annotations

import json
import re
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from ..conftest import cli_env
from ..helpers.raw_stdio import (
    RawServer,
    has_traceback,
    lsp_request,
    mcp_handshake,
    start_lsp,
    start_mcp,
    tool_call,
)

DEEP = "[" * 100_000 + "]" * 100_000


@pytest.fixture(scope="module")
def mcp(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RawServer]:
    root = tmp_path_factory.mktemp("mcp-faults")
    server = start_mcp(
        root, cli_env(f"sqlite:///{root / 'brain.db'}", INFINITE_CONTEXT_DATA_DIR=str(root / "data"))
    )
    yield server
    server.close()


@pytest.fixture(scope="module")
def lsp(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RawServer]:
    root = tmp_path_factory.mktemp("lsp-faults")
    server = start_lsp(
        root, cli_env(f"sqlite:///{root / 'brain.db'}", INFINITE_CONTEXT_DATA_DIR=str(root / "data"))
    )
    yield server
    server.close()


def _id(message: str) -> int:
    """The request id a test message was sent with (each starts with it)."""
    found = re.search(r'"id":(\d+)', message[:40])
    assert found is not None, message[:40]
    return int(found.group(1))


MCP_CASES = [
    (
        "surrogate",
        tool_call(1, "store", '{"content": "cut emoji \\ud83d"}'),
        "params.arguments.content",
        "surrogate",
    ),
    ("deep", tool_call(2, "store", '{"content": ' + DEEP + "}"), "nested deeper", "flat"),
    ("big int", tool_call(3, "list", '{"offset": 9223372036854775808}'), "offset: must be <=", "Fix"),
    ("Infinity", tool_call(4, "compact", '{"target": Infinity}'), "target: input should be a finite", "Fix"),
    ("NaN", tool_call(5, "configure", '{"threshold": NaN}'), "threshold: input should be a finite", "Fix"),
    ("10 MB id", tool_call(6, "forget", json.dumps({"id": "a" * 10_000_000})), "id:", "128"),
    ("bad id chars", tool_call(7, "pin", '{"id": "../etc/passwd"}'), "id:", "letters, digits"),
    ("not JSON", '{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{', "not valid JSON", "Fix"),
    ("not JSON-RPC", '{"jsonrpc":"2.0","id":9,"params":{}}', "not a valid JSON-RPC", "Fix"),
]
#: the lines the stock MCP SDK leaves unanswered (see ``test_the_stock_mcp_sdk_*``)
UNREADABLE = ["surrogate", "deep", "not JSON", "not JSON-RPC"]


@pytest.mark.parametrize(("name", "line", "names", "fix"), MCP_CASES, ids=[c[0] for c in MCP_CASES])
def test_mcp_answers_what_the_sdk_cannot_parse(
    mcp: RawServer, name: str, line: str, names: str, fix: str
) -> None:
    msg_id = _id(line)
    mcp.send(line)
    reply = mcp.reply(msg_id, timeout=2.0)
    assert reply is not None, f"{name}: no reply within 2 s\n{mcp.stderr()[-2000:]}"
    text = reply["error"]["message"] if "error" in reply else reply["result"]["content"][0]["text"]
    assert "error" in reply or reply["result"]["isError"]
    assert names in text and fix in text, text
    assert "Error executing tool" not in text and not has_traceback(reply)
    mcp.request(100, "tools/call", {"name": "status", "arguments": {}})
    after = mcp.reply(100, timeout=5.0)
    assert after is not None and not after["result"]["isError"], after


LSP_CASES = [
    (
        "deep 50k",
        lsp_request(1, "infiniteContext/status", '{"x": ' + "[" * 50_000 + "]" * 50_000 + "}"),
        "nested",
    ),
    ("surrogate", lsp_request(2, "infiniteContext/checkpoint", '{"context": "a\\ud83d"}'), "params.context"),
    ("Infinity", lsp_request(3, "infiniteContext/history", '{"limit": Infinity}'), "params.limit"),
    (
        "big int",
        lsp_request(4, "infiniteContext/resume", '{"maxTokens": 1180591620717411303424}'),
        "params.maxTokens",
    ),
    ("not JSON", '{"jsonrpc":"2.0","id":5,"method":"infiniteContext/status","params":{', "not valid JSON"),
    ("LSP type", lsp_request(6, "textDocument/hover", '{"textDocument": {"uri": 5}}'), "params.position"),
    ("bad param", lsp_request(7, "infiniteContext/history", '{"limit": "ten"}'), "limit: must be an integer"),
]


@pytest.mark.parametrize(("name", "body", "names"), LSP_CASES, ids=[c[0] for c in LSP_CASES])
def test_lsp_answers_every_bad_frame(lsp: RawServer, name: str, body: str, names: str) -> None:
    lsp.send(body)
    reply = lsp.reply(_id(body), timeout=2.0)
    assert reply is not None, f"{name}: no reply within 2 s\n{lsp.stderr()[-2000:]}"
    assert names in reply["error"]["message"] and "Fix" in reply["error"]["message"], reply
    assert not has_traceback(reply)
    lsp.request(100, "infiniteContext/status", {})
    assert "result" in (lsp.reply(100, timeout=5.0) or {})


def test_lsp_frame_without_content_length_does_not_desynchronise(lsp: RawServer) -> None:
    headerless = json.dumps({"jsonrpc": "2.0", "id": 200, "method": "infiniteContext/status", "params": {}})
    lsp.send_raw(b"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n" + headerless.encode())
    for n in range(201, 204):  # every frame after it is read and answered
        lsp.request(n, "infiniteContext/status", {})
        assert "result" in (lsp.reply(n, timeout=3.0) or {}), lsp.stderr()[-2000:]
    refused = lsp.reply(200, timeout=1.0)  # the headerless request itself, answered once read
    assert refused is not None and "Content-Length" in refused["error"]["message"]
    assert lsp.alive()


def test_lsp_error_replies_carry_no_traceback(tmp_path: Path) -> None:
    """An unexpected exception inside pygls's own handling (here: a standard request with a bad
    shape reaching a pygls builtin) is answered as a short message."""
    env = cli_env(f"sqlite:///{tmp_path / 'brain.db'}", INFINITE_CONTEXT_DATA_DIR=str(tmp_path / "data"))
    server = start_lsp(tmp_path, env)
    try:
        server.request(1, "workspace/executeCommand", {"command": "nope", "arguments": []})
        server.request(2, "shutdown", None)
        for msg_id in (1, 2):
            reply = server.reply(msg_id, timeout=3.0)
            assert reply is not None and not has_traceback(reply), reply
    finally:
        server.close()


BARE_MCP = """
from mcp.server.mcpserver import MCPServer

app = MCPServer("bare")


@app.tool()
def store(content: str) -> str:
    return "stored"


app.run("stdio")
"""

BARE_LSP = """
from pygls.lsp.server import LanguageServer

server = LanguageServer("bare", "0")


@server.feature("bare/status")
def status(ls, params):
    return {"ok": True}


server.start_io()
"""


def _bare(tmp_path: Path, source: str, framed: bool) -> RawServer:
    script = tmp_path / "bare_server.py"
    script.write_text(textwrap.dedent(source))
    return RawServer([str(script)], tmp_path, cli_env("sqlite:///unused"), framed, command=[sys.executable])


@pytest.mark.parametrize("name", UNREADABLE)
def test_the_stock_mcp_sdk_leaves_unreadable_lines_unanswered(tmp_path: Path, name: str) -> None:
    """A stock MCPServer (``run("stdio")``) drops a line its transport cannot read: no reply,
    ever (the ping sent after it is answered, so the line was read and dropped)."""
    (line,) = [c[1] for c in MCP_CASES if c[0] == name]
    server = _bare(tmp_path, BARE_MCP, framed=False)
    try:
        mcp_handshake(server, 30)
        server.send(line)
        server.request(100, "ping", {})
        assert server.reply(100, 10) is not None, server.stderr()
        assert server.reply(_id(line), 0.5) is None
    finally:
        server.close()


@pytest.mark.parametrize("raw_id", ["1.5", "true"])
def test_mcp_answers_a_request_whose_id_the_sdk_cannot_take(mcp: RawServer, raw_id: str) -> None:
    mcp.send(f'{{"jsonrpc":"2.0","id":{raw_id},"method":"ping"}}')
    reply = mcp.reply(None, timeout=2.0)
    assert reply is not None and "id: must be a string or an integer" in reply["error"]["message"]
    assert "Fix:" in reply["error"]["message"]


@pytest.mark.parametrize("raw_id", ["1.5", "true"])
def test_the_stock_mcp_sdk_reads_such_a_request_as_a_notification(tmp_path: Path, raw_id: str) -> None:
    """A stock MCPServer takes a request whose id is neither a string nor an integer for a
    notification of the same method: it never answers it (the ping after it is answered)."""
    server = _bare(tmp_path, BARE_MCP, framed=False)
    try:
        mcp_handshake(server, 30)
        server.send(f'{{"jsonrpc":"2.0","id":{raw_id},"method":"ping"}}')
        server.request(100, "ping", {})
        assert server.reply(100, 10) is not None, server.stderr()
        assert server.reply(None, 0.5) is None
    finally:
        server.close()


LSP_UNANSWERED = ["deep 50k", "not JSON", "LSP type"]


@pytest.mark.parametrize("name", LSP_UNANSWERED)
def test_the_stock_pygls_leaves_frames_it_cannot_read_unanswered(tmp_path: Path, name: str) -> None:
    """pygls's ``start_io`` logs a frame it cannot read or structure, and answers nothing."""
    (body,) = [c[1] for c in LSP_CASES if c[0] == name]
    server = _bare(tmp_path, BARE_LSP, framed=True)
    try:
        server.request(0, "initialize", {"processId": None, "rootUri": None, "capabilities": {}})
        assert server.reply(0, 30) is not None, server.stderr()
        server.send(body)
        server.request(100, "bare/status", {})
        assert server.reply(100, 10) is not None, server.stderr()
        assert server.reply(_id(body), 0.5) is None
    finally:
        server.close()


def test_the_stock_pygls_loses_every_frame_after_one_without_content_length(tmp_path: Path) -> None:
    server = _bare(tmp_path, BARE_LSP, framed=True)
    try:
        server.request(0, "initialize", {"processId": None, "rootUri": None, "capabilities": {}})
        assert server.reply(0, 30) is not None, server.stderr()
        headerless = json.dumps({"jsonrpc": "2.0", "id": 200, "method": "bare/status", "params": {}})
        server.send_raw(
            b"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n" + headerless.encode()
        )
        for n in range(201, 203):
            server.request(n, "bare/status", {})
            assert server.reply(n, 1.0) is None
        assert server.alive()
    finally:
        server.close()
