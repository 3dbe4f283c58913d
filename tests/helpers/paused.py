"""A conversation sent the way Claude Code sends one, with pauses: for the tests of the cache
lifetime the live transform asks for (core) and of the header the proxy adds with it (server)."""

from __future__ import annotations

from typing import Any

import orjson


def paused_request(turns: int, ttl: str | None = None) -> bytes:
    """A request the way Claude Code sends one: system and tools with breakpoints, then ``turns``
    tool calls with their results, the last block carrying the client's last breakpoint."""
    marker: dict[str, Any] = {"type": "ephemeral", **({"ttl": ttl} if ttl else {})}
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": [{"type": "text", "text": "fix the build"}]}
    ]
    for i in range(turns):
        use = {"type": "tool_use", "id": f"t{i}", "name": "Bash", "input": {"command": f"make step{i}"}}
        messages.append({"role": "assistant", "content": [use]})
        output = f"step {i} output line\n" * 300  # ~1,500 tokens: sweeps come every few requests
        messages.append(
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{i}", "content": output}]}
        )
    messages[-1]["content"][-1]["cache_control"] = marker
    prompt = (
        "You are a coding assistant. Follow the project's conventions.\n" * 900
    )  # ~18k tokens, as Claude Code's
    system = [{"type": "text", "text": prompt, "cache_control": dict(marker)}]
    tools = [{"name": "Bash", "description": "Run a command.", "input_schema": {"type": "object"}}]
    return orjson.dumps(
        {"metadata": {"user_id": "u"}, "system": system, "tools": tools, "messages": messages}
    )


def ttls(raw: bytes) -> list[str | None]:
    found: list[str | None] = []

    def visit(value: Any) -> None:
        if isinstance(value, dict):
            if isinstance(value.get("cache_control"), dict):
                found.append(value["cache_control"].get("ttl"))
            for inner in value.values():
                visit(inner)
        elif isinstance(value, list):
            for inner in value:
                visit(inner)

    visit(orjson.loads(raw))
    return found


#: a conversation's requests (time, turns): 30 s apart, with a pause of 10 minutes every 6 requests
PAUSED = [(1000.0 + 30 * n + 600 * ((n - 1) // 6), n) for n in range(1, 25)]
