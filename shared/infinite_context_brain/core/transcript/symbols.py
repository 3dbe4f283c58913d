"""The names an edit defines or changes: what "edited lib/auth.ex" leaves out.

An Edit's ``new_string``, a Write's ``content`` or a MultiEdit's edits name the functions,
classes and modules the work is about (``handle_event("close_review_session")``,
``compute_expand_groups``): a next session finds them faster than the file alone. Read with one
language-blind pattern (the keywords that define something in the common languages), never by
parsing the code.
"""

from __future__ import annotations

import re
from typing import Any

MAX_SYMBOLS = 8
_DEFINES = re.compile(
    r"\b(?:def|defp|defmacro|defmodule|defstruct|function|func|class|interface|struct|enum|trait|"
    r"impl|module|protocol|record|async def|export (?:default )?(?:async )?function|"
    r"export (?:const|let|type|interface|class))\s+([A-Za-z_][\w.!?]*)"
    r"|\bfn\s+([A-Za-z_]\w*)\s*[(<]",  # Rust's fn (an Elixir ``fn x ->`` is no definition)
)
_TOO_COMMON = frozenset(
    {"self", "this", "name", "value", "data", "result", "true", "false", "nil", "none", "null", "new"}
)
#: event and route names: ``handle_event("close_review_session", ...)``, ``@app.get("/health")``
_NAMED_HANDLER = re.compile(
    r"\b(?:handle_event|handle_info|handle_call|on|route|get|post|put|delete)\(\s*[\"']([^\"'\s]{3,60})[\"']"
)


def _texts(tool: str, data: dict[str, Any]) -> list[str]:
    if tool == "Write" and isinstance(data.get("content"), str):
        return [data["content"]]
    if tool == "Edit" and isinstance(data.get("new_string"), str):
        return [data["new_string"]]
    if tool == "MultiEdit" and isinstance(data.get("edits"), list):
        return [
            e["new_string"]
            for e in data["edits"]
            if isinstance(e, dict) and isinstance(e.get("new_string"), str)
        ]
    if tool == "NotebookEdit" and isinstance(data.get("new_source"), str):
        return [data["new_source"]]
    return []


def edited_symbols(tool: str, data: dict[str, Any]) -> list[str]:
    """The names ``tool``'s input defines, in order, at most ``MAX_SYMBOLS``."""
    found: list[str] = []
    for text in _texts(tool, data):
        head = text[:20_000]  # a whole file written: its first definitions say what it is
        for match in (*_DEFINES.finditer(head), *_NAMED_HANDLER.finditer(head)):
            name = (match.group(1) or match.group(match.lastindex or 1) or "").rstrip(".")
            if len(name) >= 3 and name.lower() not in _TOO_COMMON and name not in found:
                found.append(name)
    return found[:MAX_SYMBOLS]
