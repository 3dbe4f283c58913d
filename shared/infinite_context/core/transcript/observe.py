"""Observations: what an engineer would keep of a tool result, in ~300 tokens.

One deterministic builder per tool (Read, Bash, Grep, Glob, Edit/MultiEdit/Write, Task/Agent,
WebFetch, MCP tools, anything else); errors are kept verbatim up to the cap. Builders take the
tool input and the result text (plus Claude Code's ``toolUseResult`` / hook ``tool_response``
object when there is one) and never raise on odd shapes: a missing field just says less.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from typing import Any

from ..models import Observation
from ..redact import redact
from ..tokens import count_tokens, fast_count

DEFAULT_MAX_TOKENS = 300
_DEFINITION = re.compile(
    r"^\s*(?:export\s+)?(?:async\s+)?(?:pub\s+)?(?:def|class|function|func|fn|struct|interface|enum|trait|impl|"
    r"module|defmodule|defp?|type|const|let)\s+([A-Za-z_][\w.]*)"
)
_NUMBERED = re.compile(r"^\s*(\d+)[→\t]")
_ERROR_LINE = re.compile(
    r"(error|exception|traceback|failed|failure|panic|fatal|denied|not found|\bFAIL\b)", re.I
)


def _lines(text: str) -> list[str]:
    return text.splitlines()


def _trim(text: str, max_tokens: int) -> str:
    if count_tokens(text) <= max_tokens:
        return text
    # Binary search on characters: count_tokens is monotone enough for this.
    lo, hi = 0, len(text)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if count_tokens(text[:mid]) <= max_tokens - 3:
            lo = mid
        else:
            hi = mid - 1
    return text[:lo].rstrip() + " …"


def _tail(lines: list[str], n: int) -> list[str]:
    return [ln for ln in lines if ln.strip()][-n:]


def _read(inp: dict[str, Any], text: str, extra: dict[str, Any]) -> str:
    path = inp.get("file_path", "?")
    lines = _lines(text)
    numbers = [int(m.group(1)) for ln in lines if (m := _NUMBERED.match(ln))]
    span = f"lines {numbers[0]}-{numbers[-1]}" if numbers else f"{len(lines)} lines"
    body = [_NUMBERED.sub("", ln) for ln in lines]
    names = list(dict.fromkeys(m.group(1) for ln in body if (m := _DEFINITION.match(ln))))
    out = [f"Read {path} ({span}, {len(lines)} lines)"]
    if names:
        out.append("Definitions: " + ", ".join(names[:25]))
    else:
        out.append("Starts: " + " | ".join(ln.strip() for ln in body[:3] if ln.strip())[:200])
    return "\n".join(out)


def _bash(inp: dict[str, Any], text: str, extra: dict[str, Any]) -> str:
    command = str(inp.get("command", "?"))
    stdout = str(extra.get("stdout", text)) if extra else text
    stderr = str(extra.get("stderr", "")) if extra else ""
    interrupted = bool(extra.get("interrupted")) if extra else False
    exit_match = re.search(r"exit code[: ]+(\d+)", text, re.I)
    status = "interrupted" if interrupted else (f"exit {exit_match.group(1)}" if exit_match else "done")
    lines = _lines(stdout + ("\n" + stderr if stderr else ""))
    errors = [ln.strip() for ln in lines if _ERROR_LINE.search(ln)][:8]
    out = [f"$ {command[:300]}", f"Status: {status}; {len(lines)} output lines"]
    if errors:
        out.append("Error lines:\n" + "\n".join(errors))
    tail = _tail(lines, 5)
    if tail:
        out.append("Last lines:\n" + "\n".join(t[:200] for t in tail))
    return "\n".join(out)


def _grep(inp: dict[str, Any], text: str, extra: dict[str, Any]) -> str:
    lines = [ln for ln in _lines(text) if ln.strip()]
    files = Counter(ln.split(":", 1)[0] for ln in lines if ":" in ln) or Counter(lines)
    head = f"Grep '{inp.get('pattern', '?')}'" + (f" in {inp['path']}" if inp.get("path") else "")
    out = [f"{head}: {len(lines)} matching lines in {len(files)} files"]
    if files:
        out.append("Top files: " + ", ".join(f"{f} ({n})" if n > 1 else f for f, n in files.most_common(8)))
    return "\n".join(out)


def _glob(inp: dict[str, Any], text: str, extra: dict[str, Any]) -> str:
    files = [ln.strip() for ln in _lines(text) if ln.strip()]
    out = [f"Glob '{inp.get('pattern', '?')}': {len(files)} files"]
    if files:
        out.append("First: " + ", ".join(files[:10]))
    return "\n".join(out)


def _edit(inp: dict[str, Any], text: str, extra: dict[str, Any]) -> str:
    path = inp.get("file_path", "?")
    raw_edits = inp.get("edits")
    edits: list[dict[str, Any]] = (
        [e for e in raw_edits if isinstance(e, dict)] if isinstance(raw_edits, list) else [inp]
    )
    removed = sum(len(str(e.get("old_string", "")).splitlines()) for e in edits)
    added = sum(len(str(e.get("new_string", "")).splitlines()) for e in edits)
    if "content" in inp:  # Write
        return f"Wrote {path} ({len(str(inp['content']).splitlines())} lines)"
    return f"Edited {path}: {len(edits)} edit(s), -{removed} +{added} lines"


def _task(inp: dict[str, Any], text: str, extra: dict[str, Any]) -> str:
    what = inp.get("description") or inp.get("subagent_type") or "subagent"
    return f"Subagent '{what}' answered:\n{text.strip()}"


def _webfetch(inp: dict[str, Any], text: str, extra: dict[str, Any]) -> str:
    status = extra.get("code") or extra.get("status") if extra else None
    paragraphs = [p.strip() for p in text.split("\n\n") if p.strip()]
    first = paragraphs[0] if paragraphs else ""
    head = f"Fetched {inp.get('url', '?')}" + (f" (HTTP {status})" if status else "")
    return f"{head}: {len(text)} chars\n{first}"


def _generic(name: str) -> Callable[[dict[str, Any], str, dict[str, Any]], str]:
    def build(inp: dict[str, Any], text: str, extra: dict[str, Any]) -> str:
        lines = _lines(text)
        return f"{name} returned {len(lines)} lines:\n{text.strip()}"

    return build


BUILDERS: dict[str, Callable[[dict[str, Any], str, dict[str, Any]], str]] = {
    "Read": _read,
    "Bash": _bash,
    "Grep": _grep,
    "Glob": _glob,
    "Edit": _edit,
    "MultiEdit": _edit,
    "Write": _edit,
    "Task": _task,
    "Agent": _task,
    "WebFetch": _webfetch,
}


def build_observation(
    tool_use_id: str,
    tool_name: str,
    tool_input: dict[str, Any] | None,
    result_text: str,
    *,
    is_error: bool = False,
    extra: dict[str, Any] | None = None,
    max_tokens: int = DEFAULT_MAX_TOKENS,
    source: str = "transcript",
) -> Observation:
    inp = tool_input if isinstance(tool_input, dict) else {}
    if is_error:
        body = f"{tool_name} failed:\n{result_text.strip()}"
    else:
        builder = BUILDERS.get(tool_name) or _generic(tool_name)
        try:
            body = builder(inp, result_text, extra or {})
        except Exception:  # an odd shape must not lose the observation
            body = _generic(tool_name)(inp, result_text, {})
    text = _trim(redact(body), max_tokens)
    return Observation(
        tool_use_id=tool_use_id,
        tool_name=tool_name,
        text=text,
        original_tokens=fast_count(result_text),
        tokens=count_tokens(text),
        is_error=is_error,
        source=source,
    )


def response_text(tool_response: Any) -> str:
    """Text of a PostToolUse hook's ``tool_response`` (a string, a content list or an object)."""
    if isinstance(tool_response, str):
        return tool_response
    if isinstance(tool_response, list):
        from .reader import content_text

        return content_text(tool_response)
    if isinstance(tool_response, dict):
        for key in ("stdout", "content", "output", "result", "text"):
            value = tool_response.get(key)
            if isinstance(value, str) and value:
                stderr = tool_response.get("stderr")
                return value + (f"\n{stderr}" if isinstance(stderr, str) and stderr else "")
            if isinstance(value, list):
                from .reader import content_text

                return content_text(value)
            if isinstance(value, dict) and isinstance(value.get("content"), str):
                return str(value["content"])
        file = tool_response.get("file")
        if isinstance(file, dict) and isinstance(file.get("content"), str):
            return str(file["content"])
        import orjson

        return orjson.dumps(tool_response).decode()
    return "" if tool_response is None else str(tool_response)
