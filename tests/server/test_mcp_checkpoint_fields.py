"""The MCP ``checkpoint`` tool's structured fields, through the real MCP client: described in its
input schema, merged by the documented replace/add rules, refused by name when malformed, and a
checkpoint that changes nothing says so."""

from __future__ import annotations

from pathlib import Path

from ..helpers.mcp_client import mcp_session, text_of

FIELDS = {"task", "in_progress", "next_steps", "done", "decisions", "blockers", "files", "notes", "gotchas"}


async def test_the_schema_describes_each_field(project_dir: Path, store_url: str) -> None:
    async with mcp_session(project_dir, store_url) as s:
        tool = next(t for t in (await s.list_tools()).tools if t.name == "checkpoint")
    schema = tool.input_schema
    properties = schema["properties"]
    assert FIELDS | {"context", "token_count"} <= set(properties)
    assert not schema.get("required")  # text, fields, or both

    def description(prop: dict[str, object]) -> str:
        options = prop.get("anyOf") or [prop]  # an optional field: the description sits on its type
        return " ".join(str(o.get("description", "")) for o in options if isinstance(o, dict))

    for name in FIELDS - {"decisions", "blockers"}:
        assert description(properties[name]), name
    assert "Replaces the stored next steps" in description(properties["next_steps"])

    decision = schema["$defs"]["StatedDecision"]["properties"]
    assert {"decision", "reason"} <= set(decision) and decision["reason"]["description"]
    assert "tried" in schema["$defs"]["StatedBlocker"]["properties"]
    assert "milestones" in (tool.description or "")


async def test_fields_are_merged_by_their_rules(project_dir: Path, store_url: str) -> None:
    async with mcp_session(project_dir, store_url) as s:
        first = await s.call_tool(
            "checkpoint",
            {
                "task": "Add CSV export to the report page",
                "in_progress": "the serializer",
                "next_steps": ["wire the export button", "test with 10k rows", "write the docs"],
                "decisions": [
                    {"decision": "stream rows with csv.writer", "reason": "10k rows do not fit in memory"}
                ],
                "blockers": [{"blocker": "the staging DB is down", "tried": ["restarting the tunnel"]}],
                "files": ["src/app.py"],
                "gotchas": ["to_csv writes the index unless index=False"],
                "context": "Tried pandas first; too slow for 10k rows.",
            },
        )
        assert not first.is_error, text_of(first)
        second = await s.call_tool(
            "checkpoint",
            {
                "done": ["the serializer"],
                "in_progress": "the export button",
                "next_steps": ["test with 10k rows", "write the docs"],
                "blockers": [],
                "notes": ["exports run as the app user"],
            },
        )
        assert not second.is_error, text_of(second)
        resume = await s.call_tool("resume", {})
        again = await s.call_tool("checkpoint", {"next_steps": ["test with 10k rows", "write the docs"]})
    state = resume.structured_content
    text = state["markdown"]
    assert "**Task:** Add CSV export to the report page" in text
    assert "**In progress:** the export button" in text
    next_part = text.split("## Next steps", 1)[1].split("##", 1)[0]
    assert "test with 10k rows" in next_part and "wire the export button" not in next_part  # replaced
    assert "stream rows with csv.writer — because 10k rows do not fit in memory" in text
    assert "staging DB" not in text.split("## Journal", 1)[0]  # blockers replaced by an empty list
    assert "[gotcha] to_csv writes the index unless index=False" in text
    assert "[note] exports run as the app user" in text
    assert "the serializer" in text.split("## Recent changes", 1)[1]
    assert "Tried pandas first; too slow for 10k rows." in text  # the text as written, in the journal
    assert again.structured_content["changed"] is False and "Not saved" in text_of(again)


async def test_malformed_fields_are_refused_by_name_and_nothing_is_stored(
    project_dir: Path, store_url: str
) -> None:
    async with mcp_session(project_dir, store_url) as s:
        bad = await s.call_tool("checkpoint", {"decisions": [{"decision": "x", "why": "y"}]})
        worse = await s.call_tool("checkpoint", {"next_steps": "not a list"})
        empty = await s.call_tool("checkpoint", {})
        status = await s.call_tool("status", {})
    assert bad.is_error and "decisions[0].why" in text_of(bad)
    assert worse.is_error and "next_steps" in text_of(worse)
    assert empty.is_error and "context" in text_of(empty) and "Fix:" in text_of(empty)
    assert status.structured_content["has_state"] is False
