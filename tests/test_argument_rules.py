"""One rule per argument, the same on every surface.

Each case drives one bad value through every surface that takes the argument: the core
(``ProjectBrain`` / ``WorkingMemory``), the real MCP client over stdio, the language server with
pytest-lsp, the notebook magic in an in-process IPython and the CLI (``main(argv)``). Each must
refuse it with a message naming the argument as that surface spells it (``token_count``,
``tokenCount``, ``--tokens``) and stating the same bound. The MCP tool's JSON schema must carry the
rule's bounds too. The MCP and language servers start once for the module (in a thread with its
own event loop), so the table costs one start of each.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Callable, Iterator
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell
from lsprotocol import types
from pydantic import TypeAdapter
from pygls.exceptions import JsonRpcException
from pytest_lsp import ClientServerConfig

from infinite_context_brain.core import params
from infinite_context_brain.core.brain import ProjectBrain
from infinite_context_brain.core.errors import InvalidInput

from .conftest import run_cli
from .helpers.lsp_client import SERVER
from .helpers.mcp_client import mcp_session, text_of
from .notebook.conftest import shell  # noqa: F401  (the notebook fixture, reused)

Call = Callable[[ProjectBrain], Any]


@dataclass
class Rule:
    """One argument: its rule in core.params, the bad value per surface, the name each uses."""

    name: str
    rule: Any
    #: a piece of the message every surface must show: the bound that was crossed
    bound: str
    core: tuple[Call, str] | None = None
    mcp: tuple[str, dict[str, Any], str] | None = None
    lsp: tuple[str, dict[str, Any], str] | None = None
    notebook: tuple[str, str, str] | None = None
    cli: tuple[list[str], str] | None = None


RULES = [
    Rule(
        "token_count",
        params.TokenCount,
        ">= 0",
        core=(lambda b: b.checkpoint("x", token_count=-1), "token_count"),
        mcp=("checkpoint", {"context": "x", "token_count": -1}, "token_count"),
        lsp=("checkpoint", {"context": "x", "tokenCount": -1}, "tokenCount"),
        notebook=("checkpoint", "--tokens -1 -m x", "--tokens"),
        cli=(["checkpoint", "-m", "x", "--tokens", "-1"], "--tokens"),
    ),
    Rule(
        "context",
        params.ContextText,
        "text",
        core=(lambda b: b.checkpoint(42), "context"),
        mcp=("checkpoint", {"context": 42}, "context"),
        lsp=("checkpoint", {"context": 42}, "context"),
    ),
    Rule(
        "max_tokens",
        params.MaxTokens,
        ">= 50",
        core=(lambda b: b.resume(49), "max_tokens"),
        mcp=("resume", {"max_tokens": 49}, "max_tokens"),
        lsp=("resume", {"maxTokens": 49}, "maxTokens"),
        notebook=("resume", "--max-tokens 49", "--max-tokens"),
        cli=(["resume", "--max-tokens", "49"], "--max-tokens"),
    ),
    Rule(
        "history limit, above",  # the MCP server capped it at 1000, the LSP and the core did not
        params.HistoryLimit,
        "1,000",
        core=(lambda b: b.history(1001), "limit"),
        mcp=("history", {"limit": 1001}, "limit"),
        lsp=("history", {"limit": 1001}, "limit"),
        notebook=("ctx_history", "--limit 1001", "--limit"),
        cli=(["history", "--limit", "1001"], "--limit"),
    ),
    Rule(
        "history limit, below",
        params.HistoryLimit,
        "1",
        core=(lambda b: b.history(0), "limit"),
        mcp=("history", {"limit": 0}, "limit"),
        lsp=("history", {"limit": 0}, "limit"),
        notebook=("ctx_history", "--limit 0", "--limit"),
        cli=(["history", "--limit", "0"], "--limit"),
    ),
    Rule(
        "steps",
        params.Steps,
        ">= 1",
        core=(lambda b: b.rollback(steps=0), "steps"),
        mcp=("rollback", {"steps": 0}, "steps"),
        lsp=("rollback", {"steps": 0}, "steps"),
        notebook=("rollback", "--steps 0", "--steps"),
        cli=(["rollback", "--steps", "0"], "--steps"),
    ),
    Rule(
        "version",
        params.Version,
        ">= 1",
        core=(lambda b: b.rollback(version=0), "version"),
        mcp=("rollback", {"version": 0}, "version"),
        lsp=("rollback", {"version": 0}, "version"),
        notebook=("rollback", "--version 0", "--version"),
        cli=(["rollback", "--version", "0"], "--version"),
    ),
    Rule(
        "from_version",
        params.FromVersion,
        ">= 1",
        core=(lambda b: b.diff(0, 1), "from_version"),
        mcp=("diff", {"from_version": 0, "to_version": 1}, "from_version"),
        lsp=("diff", {"from": 0, "to": 1}, "from"),
        cli=(["diff", "0", "1"], "FROM"),
    ),
    Rule(
        "importance",
        params.Importance,
        "10",
        core=(lambda b: b.memory().store_item(content="x", importance=11), "importance"),
        mcp=("store", {"content": "x", "importance": 11}, "importance"),
        cli=(["memory", "store", "-m", "x", "--importance", "11"], "--importance"),
    ),
    Rule(
        "memory content",
        params.MemoryContent,
        "empty",
        core=(lambda b: b.memory().store_item(content="   "), "content"),
        mcp=("store", {"content": "   "}, "content"),
        cli=(["memory", "store", "-m", "   "], "-m"),
    ),
    Rule(
        "search limit",
        params.SearchLimit,
        "100",
        core=(lambda b: b.memory().query("x", 101), "limit"),
        mcp=("query", {"query": "x", "limit": 101}, "limit"),
        cli=(["memory", "query", "x", "--limit", "101"], "--limit"),
    ),
    Rule(
        "page limit",
        params.PageLimit,
        "500",
        core=(lambda b: b.memory().list_items(0, 501), "limit"),
        mcp=("list", {"limit": 501}, "limit"),
        cli=(["memory", "list", "--limit", "501"], "--limit"),
    ),
    Rule(
        "page offset",
        params.PageOffset,
        ">= 0",
        core=(lambda b: b.memory().list_items(-1), "offset"),
        mcp=("list", {"offset": -1}, "offset"),
        cli=(["memory", "list", "--offset", "-1"], "--offset"),
    ),
    Rule(
        "memory id",
        params.MemoryId,
        "empty",
        core=(lambda b: b.memory().forget(""), "item_id"),
        mcp=("forget", {"id": ""}, "id"),
    ),
    Rule(
        "compact target",
        params.CompactTarget,
        "> 0",
        core=(lambda b: b.memory().compact(0), "target"),
        mcp=("compact", {"target": 0}, "target"),
        cli=(["memory", "compact", "--target", "0"], "--target"),
    ),
    Rule(
        "memory budget",
        params.MemoryBudget,
        "1,000",
        core=(lambda b: b.memory().configure(budget=999), "budget"),
        mcp=("configure", {"budget": 999}, "budget"),
        cli=(["memory", "--budget", "999", "list"], "--budget"),
    ),
    Rule(
        "threshold",
        params.Threshold,
        "<= 1",
        core=(lambda b: b.memory().configure(threshold=1.5), "threshold"),
        mcp=("configure", {"threshold": 1.5}, "threshold"),
    ),
    Rule(
        "tool_use_id",
        params.ToolUseId,
        "empty",
        mcp=("expand", {"tool_use_id": ""}, "tool_use_id"),
        cli=(["transcript", "expand", ""], "TOOL_USE_ID"),
    ),
]


def _clean_env(data_dir: Path) -> dict[str, str]:
    """The environment the module's servers see: none of the developer's settings (as the
    per-test ``_isolated_env`` fixture does; module-scoped fixtures run before it)."""
    drop = ("INFINITE_CONTEXT_", "REDIS_URL", "PROJECT_ROOT", "CLAUDE", "GEMINI_", "GOOGLE_API_KEY")
    env = {k: v for k, v in os.environ.items() if not k.startswith(drop)}
    env = {k: v for k, v in env.items() if k not in {"ANTHROPIC_API_KEY", "ANTHROPIC_MODEL", "LOG_LEVEL"}}
    return {**env, "INFINITE_CONTEXT_DATA_DIR": str(data_dir), "PYTHONUNBUFFERED": "1"}


class Servers:
    """The MCP server (real client, stdio) and the language server (pytest-lsp), both opened by
    one owner task on a loop in a thread (anyio wants its scopes closed by the task that opened
    them); the tests hand it coroutines."""

    def __init__(self, root: Path, store_url: str, env: dict[str, str]) -> None:
        self.root, self.store_url, self.env = root, store_url, env
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.ready: asyncio.Future[None] = self.loop.create_future()
        self.stop: asyncio.Event | None = None
        self.owner = asyncio.run_coroutine_threadsafe(self._own(), self.loop)
        asyncio.run_coroutine_threadsafe(asyncio.wait_for(asyncio.shield(self.ready), 60), self.loop).result(
            90
        )

    async def _own(self) -> None:
        self.stop = asyncio.Event()
        try:
            async with AsyncExitStack() as stack:
                saved = dict(os.environ)
                os.environ.clear()
                os.environ.update(self.env)  # mcp_session builds its env from os.environ
                try:
                    self.mcp = await stack.enter_async_context(mcp_session(self.root, self.store_url))
                finally:
                    os.environ.clear()
                    os.environ.update(saved)
                config = ClientServerConfig(server_command=SERVER, server_env=self.env)
                self.lsp = await config.start()
                await self.lsp.initialize_session(
                    types.InitializeParams(
                        capabilities=types.ClientCapabilities(),
                        workspace_folders=[types.WorkspaceFolder(uri=self.root.as_uri(), name="rules")],
                        initialization_options={"storeUrl": self.store_url},
                    )
                )
                self.ready.set_result(None)
                await self.stop.wait()
                await self.lsp.shutdown_session()
        except BaseException as exc:
            if not self.ready.done():
                self.ready.set_exception(exc)
            raise

    def run(self, coro: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(60)

    def close(self) -> None:
        assert self.stop is not None
        self.loop.call_soon_threadsafe(self.stop.set)
        try:
            self.owner.result(60)
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(10)


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Servers]:
    base = tmp_path_factory.mktemp("rules")
    root = base / "project"
    root.mkdir()
    (root / ".git").mkdir()
    running = Servers(root, f"sqlite:///{base / 'brain.db'}", _clean_env(base / "data"))
    yield running
    running.close()


def _schema_of(tool_schema: dict[str, Any], name: str) -> dict[str, Any]:
    prop = dict(tool_schema["properties"][name])
    for branch in prop.pop("anyOf", []):
        if branch.get("type") != "null":
            prop |= branch
    return prop


BOUND_KEYS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "minLength", "maxLength", "type")


@pytest.mark.parametrize("case", RULES, ids=[r.name for r in RULES])
def test_every_surface_refuses_the_same_bad_value(
    case: Rule,
    servers: Servers,
    brain: ProjectBrain,
    shell: InteractiveShell,  # noqa: F811
    store_url: str,
    project_dir: Path,
) -> None:
    messages: dict[str, str] = {}
    if case.core is not None:
        call, field = case.core
        with pytest.raises(InvalidInput) as info:
            call(brain)
        assert info.value.field == field and info.value.fix
        messages["core"] = str(info.value)
    if case.mcp is not None:
        tool, args, field = case.mcp
        result = servers.run(servers.mcp.call_tool(tool, args))
        assert result.is_error, (tool, args)
        text = text_of(result)
        assert text.startswith(f"{field}: ") and "Fix: " in text, text
        messages["mcp"] = text
        # the schema the client sees carries the rule's bounds
        tools = {t.name: t for t in servers.run(servers.mcp.list_tools()).tools}
        shown = _schema_of(tools[tool].input_schema, field)
        wanted = TypeAdapter(case.rule).json_schema()
        assert {k: shown.get(k) for k in BOUND_KEYS} == {k: wanted.get(k) for k in BOUND_KEYS}
    if case.lsp is not None:
        method, lsp_params, field = case.lsp
        with pytest.raises(JsonRpcException) as raised:
            servers.run(servers.lsp.protocol.send_request_async(f"infiniteContext/{method}", lsp_params))
        assert raised.value.code == -32602
        assert str(raised.value.message).startswith(f"{field}: "), raised.value.message
        messages["lsp"] = str(raised.value.message)
    if case.notebook is not None:
        magic, line, flag = case.notebook
        with pytest.raises(UsageError) as usage:
            shell.run_line_magic(magic, line)
        assert f"argument {flag}: " in str(usage.value)
        messages["notebook"] = str(usage.value)
    if case.cli is not None:
        argv, flag = case.cli
        done = run_cli(store_url, *argv, cwd=project_dir)
        err = done.stderr.decode()
        assert done.returncode == 2 and flag in err, err
        messages["cli"] = err
    assert messages
    for surface, message in messages.items():
        assert case.bound in message, (surface, message)


def test_every_flag_names_a_rule() -> None:
    """CLI and notebook flags name their rule by text (so building the parsers loads no
    pydantic): every name must be a rule in core.params."""
    import argparse

    from infinite_context_brain.core.flags import Flag
    from infinite_context_brain.notebook.magics import ContextMagics
    from infinite_context_brain.server.cli.parser import build_parser

    def actions(parser: argparse.ArgumentParser) -> Iterator[argparse.Action]:
        for action in parser._actions:
            yield action
            for sub in getattr(action, "choices", None) or {}:
                if isinstance(action.choices, dict) and isinstance(
                    action.choices[sub], argparse.ArgumentParser
                ):
                    yield from actions(action.choices[sub])

    flags = [a.type for a in actions(build_parser()) if isinstance(a.type, Flag)]
    for magic in ("checkpoint", "resume", "ctx_history", "rollback"):
        parser = getattr(ContextMagics, magic).parser
        flags += [a.type for a in parser._actions if isinstance(a.type, Flag)]
    assert len(flags) >= 20
    for flag in flags:
        assert hasattr(params, flag.rule), flag
