"""The real MCP client over stdio against `infinite-context mcp` in a temp project."""

from __future__ import annotations

import json
from pathlib import Path

from ..helpers.mcp_client import mcp_session, text_of


async def test_full_workflow_over_stdio(project_dir: Path, store_url: str) -> None:
    async with mcp_session(project_dir, store_url) as s:
        tools = {t.name for t in (await s.list_tools()).tools}
        assert {"checkpoint", "resume", "status", "rollback", "history", "diff"} <= tools

        empty = await s.call_tool("status", {})
        assert not empty.is_error and empty.structured_content["has_state"] is False

        contexts = [
            "Current task: login form in src/auth.py. Question: JWT or server sessions?",
            "Decided: server sessions. Done: login form in src/auth.py. Next: logout button in src/app.py",
            "Done: logout button. Current task: write the README.md install section",
        ]
        versions = []
        for context in contexts:
            r = await s.call_tool("checkpoint", {"context": context, "token_count": 1234})
            assert not r.is_error, text_of(r)
            versions.append(r.structured_content["version"])
        assert versions == [1, 2, 3]

        resumed = await s.call_tool("resume", {})
        md = text_of(resumed)
        for fact in ("README.md install section", "src/auth.py", "server sessions", "logout button"):
            assert fact in md, fact
        # what Claude Code shows the model: the same compact answer as the text, not the state
        assert resumed.structured_content["version"] == 3 and "state" not in resumed.structured_content
        assert md.startswith(resumed.structured_content["markdown"])
        short = await s.call_tool("resume", {"max_tokens": 50})
        assert len(json.dumps(short.structured_content)) < len(text_of(short)) + 300
        hints = {t.name: t.annotations for t in (await s.list_tools()).tools}
        for name in ("resume", "status", "history", "diff", "query", "recall", "list", "export", "expand"):
            assert hints[name] is not None and hints[name].read_only_hint is True, name
        for name in ("forget", "rollback"):
            assert hints[name] is not None and hints[name].destructive_hint is True, name

        rb = await s.call_tool("rollback", {"steps": 2})
        assert rb.structured_content == {"version": 4, "restored_from": 1, "merged_by": "rollback:v1"}

        hist = await s.call_tool("history", {"limit": 10})
        items = hist.structured_content["items"]
        assert [i["version"] for i in items] == [4, 3, 2, 1]
        assert items[0]["merged_by"] == "rollback:v1"

        diff = await s.call_tool("diff", {"from_version": 1, "to_version": 3})
        assert text_of(diff).startswith("Version 1 -> 3:\ntask: ")  # field by field, as the CLI shows it
        assert any(c["path"] == "active_context.current_task" for c in diff.structured_content["changes"])

        status = await s.call_tool("status", {})
        assert status.structured_content["version"] == 4
        assert status.structured_content["lock_holder"].startswith("mcp:")


async def test_prompts_and_state_resource(project_dir: Path, store_url: str) -> None:
    async with mcp_session(project_dir, store_url) as s:
        names = {p.name for p in (await s.list_prompts()).prompts}
        assert {"checkpoint", "resume"} <= names
        prompt = await s.get_prompt("checkpoint", {"note": "the flaky test"})
        assert (
            "checkpoint" in prompt.messages[0].content.text
            and "the flaky test" in prompt.messages[0].content.text
        )
        await s.call_tool("checkpoint", {"context": "Current task: wire the resource"})
        resumed = await s.get_prompt("resume", {})
        assert "wire the resource" in resumed.messages[0].content.text
        resource = await s.read_resource("infinite-context://state")
        assert '"current_task": "wire the resource"' in resource.contents[0].text


async def test_bad_arguments_are_tool_errors_and_the_server_survives(
    project_dir: Path, store_url: str
) -> None:
    async with mcp_session(project_dir, store_url) as s:
        await s.call_tool("checkpoint", {"context": "Current task: survive bad input"})
        cases = [
            ("checkpoint", {}, "context"),
            ("checkpoint", {"context": ""}, "context"),
            ("checkpoint", {"context": 42}, "context"),
            ("checkpoint", {"context": "x", "token_count": -5}, "token_count"),
            ("checkpoint", {"context": "x" * 3_000_000}, "context"),
            ("rollback", {"version": 99}, "version 99"),
            ("rollback", {"steps": 0}, "steps"),
            ("rollback", {"steps": 1, "version": 1}, "steps"),
            ("diff", {"from_version": 1}, "to_version"),
            ("history", {"limit": "all"}, "limit"),
            ("resume", {"max_tokens": 1}, "max_tokens"),
        ]
        for tool, args, needle in cases:
            r = await s.call_tool(tool, args)
            assert r.is_error, (tool, args)
            assert needle in text_of(r), (tool, args, text_of(r))
        status = await s.call_tool("status", {})
        assert status.structured_content["version"] == 1
        assert status.structured_content["current_task"] == "survive bad input"
