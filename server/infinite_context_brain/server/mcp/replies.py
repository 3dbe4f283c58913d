"""A tool's answer: the text the model reads and the same answer as structured content."""

from __future__ import annotations

from typing import Any

from mcp.types import CallToolResult, TextContent
from pydantic import BaseModel


def reply(text: str, data: BaseModel | list[BaseModel] | dict[str, Any]) -> CallToolResult:
    """``data`` is a model, a list of models (as ``{"items": [...]}``) or a dict already made of
    JSON values (used as it is)."""
    if isinstance(data, BaseModel):
        structured = data.model_dump(mode="json")
    elif isinstance(data, list):
        structured = {"items": [m.model_dump(mode="json") for m in data]}
    else:
        structured = data
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=structured)
