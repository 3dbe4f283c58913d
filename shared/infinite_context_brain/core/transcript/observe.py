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
#: a Bash observation's budget, and that of any result under ``SMALL_RESULT`` tokens, is this share
#: of what it replaces (what matters of a small output is small), at least ``BUDGET_FLOOR``
#: tokens, at most the caller's ``max_tokens``; a listing's (Glob, Grep, ``ls``, ``git status``:
#: the paths are what matters) is larger; other observations have ``max_tokens``, a failure its
#: own share
BUDGET_SHARE = 0.1
BUDGET_FLOOR = 24
LISTING_SHARE = 0.2
SMALL_RESULT = 600
FAILURE_SHARE = 0.3
FAILURE_FLOOR = 80
LINE_CHARS = 140  # one quoted output line at most
_DEFINITION = re.compile(
    r"^\s*(?:export\s+)?(?:async\s+)?(?:pub\s+)?(?:def|class|function|func|fn|struct|interface|enum|trait|impl|"
    r"module|defmodule|defp?|type|const|let)\s+([A-Za-z_][\w.]*)"
)
_NUMBERED = re.compile(r"^\s*(\d+)[→\t]")
# Lines worth keeping from a command's output: real failures, not the word "error" in a log line.
_ERROR_LINE = re.compile(
    r"(error\s*[:\[(]|exception|traceback|\bfail(?:ed|ure)?\b|\bpanic|fatal:|permission denied|"
    r"no such file|command not found|\b[1-9]\d* failures?\b)",
    re.I,
)
_ERROR_WORDS = ("error", "exception", "traceback", "fail", "panic", "fatal", "denied", "no such", "not found")
_EXIT = re.compile(r"exit code[: ]+(\d+)", re.I)
# "0 failed", "errors: 0", "0 errors": a count of nothing is not a failure
_NO_FAILURES = re.compile(r"\b0 (?:failed|failures?|errors?)\b|\b(?:failed|failures?|errors?)[:=] ?0\b", re.I)
# a file path: a/b/c.ext, ./x, dir/sub/, or a bare name with a code-ish extension
_PATH = re.compile(
    r"(?:\.{0,2}/)?(?:[\w@.+-]+/)+[\w@.+-]*|\b[\w-]+\.(?:py|pyi|js|jsx|ts|tsx|rs|go|ex|exs|rb|java|kt|c|h|cc|cpp|hpp|"
    r"cs|swift|md|json|jsonl|toml|ya?ml|ini|cfg|txt|sh|sql|html|css|scss|lock|xml|csv)\b"
)


def _lines(text: str) -> list[str]:
    return text.splitlines()


def _clip(line: str, chars: int = LINE_CHARS) -> str:
    line = line.strip()
    return line if len(line) <= chars else line[: chars - 1] + "…"


def _trim(text: str, max_tokens: int) -> str:
    if len(text) <= max_tokens:  # every token spans at least one character
        return text
    # No token spans more than ~8 characters, so a longer prefix never fits: search below that.
    text = text[: max_tokens * 8]
    if count_tokens(text) <= max_tokens:
        return text
    lo, hi = 0, len(text)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if count_tokens(text[:mid]) <= max_tokens - 3:
            lo = mid
        else:
            hi = mid - 1
    return text[:lo].rstrip() + " …"


def _failure(text: str, max_tokens: int) -> str:
    """A failed result within ``max_tokens``: whole when it fits, else its first line (what ran),
    the first failure lines of the part left out (often the cause; a third of the budget at most)
    and as many of its last lines as fit (the error, its location, the summary come last)."""
    if count_tokens(text[: max_tokens * 8 + 1]) <= max_tokens:
        return text
    lines = [ln for ln in _lines(text) if ln.strip()]
    head = _clip(lines[0], 200)
    budget = max_tokens - count_tokens(head) - 12  # the gap lines and _trim's margin
    tail: list[str] = []
    for line in reversed(lines[1:]):
        clipped = _clip(line, 2 * LINE_CHARS)
        cost = count_tokens(clipped) + 1
        if cost > budget:
            break
        tail.insert(0, clipped)
        budget -= cost
    middle = "\n".join(lines[1 : len(lines) - len(tail)])
    causes: list[str] = []
    room = (max_tokens - count_tokens(head)) // 3
    for line in dict.fromkeys(_error_lines(middle)):  # a repeated failure once
        cost = count_tokens(line) + 1
        if cost > room:
            break
        causes.append(line)
        room -= cost
    while causes and tail and count_tokens("\n".join(causes)) + len(causes) > budget:
        budget += count_tokens(tail.pop(0)) + 1  # the tail gives way to the first causes
    skipped = len(lines) - 1 - len(tail)
    gap = [f"… ({skipped} lines; failures among them:)", *causes, "…"] if causes else [f"… ({skipped} lines)"]
    return "\n".join([head, *(gap if skipped else []), *tail])


def _error_lines(text: str) -> list[str]:
    """Lines with a failure in them, in order, found in one scan of the whole text (a search
    per line costs ~10x more on long outputs)."""
    lowered = text.lower()
    if not any(word in lowered for word in _ERROR_WORDS):  # most outputs: one fast C scan each
        return []
    found: list[str] = []
    last_start = -1
    for match in _ERROR_LINE.finditer(text):
        start = text.rfind("\n", 0, match.start()) + 1
        if start == last_start:
            continue
        last_start = start
        end = text.find("\n", match.end())
        line = text[start : end if end != -1 else len(text)]
        if _NO_FAILURES.search(line) and not _ERROR_LINE.search(_NO_FAILURES.sub("", line)):
            continue
        found.append(_clip(line))
    return found


def paths_in(text: str) -> list[str]:
    """File paths named in a text, first mention first (no URLs, no lone slashes)."""
    seen: dict[str, None] = {}
    for match in _PATH.finditer(text):
        path = match.group(0).rstrip(".,:;")
        start = match.start()
        if len(path) < 3 or text[max(0, start - 3) : start] == "://" or "//" in path:
            continue
        seen.setdefault(path, None)
    return list(seen)


def _listing(paths: list[str], budget_chars: int) -> str:
    """Paths joined until the budget, then how many more (an observation keeps where things are)."""
    shown: list[str] = []
    used = 0
    for path in paths:
        if used + len(path) + 2 > budget_chars:
            break
        shown.append(path)
        used += len(path) + 2
    more = len(paths) - len(shown)
    return ", ".join(shown) + (f" (+{more} more)" if more else "")


def _tail(lines: list[str], n: int) -> list[str]:
    return [_clip(ln) for ln in lines if ln.strip()][-n:]


def _head(lines: list[str], n: int) -> list[str]:
    return [_clip(ln) for ln in lines if ln.strip()][:n]


def _read(inp: dict[str, Any], text: str, extra: dict[str, Any]) -> str:
    path = inp.get("file_path", "?")
    lines = _lines(text)
    numbers = [int(m.group(1)) for ln in (lines[0], lines[-1]) if (m := _NUMBERED.match(ln))] if lines else []
    span = f"lines {numbers[0]}-{numbers[-1]}" if len(numbers) == 2 else f"{len(lines)} lines"
    names: list[str] = []
    for ln in lines:
        m = _DEFINITION.match(_NUMBERED.sub("", ln, count=1))
        if m and m.group(1) not in names:
            names.append(m.group(1))
    out = f"Read {path} ({span})"
    if names:
        shown = ", ".join(names[:12]) + (f" +{len(names) - 12} more" if len(names) > 12 else "")
        return f"{out}; defines {shown}"
    first = next((_NUMBERED.sub("", ln, count=1).strip() for ln in lines if ln.strip()), "")
    return f"{out}; starts: {_clip(first, 100)}" if first else out


def _listed(output: str, lines: list[str]) -> list[str]:
    """The paths of an output that lists paths (``ls``, ``find``, ``git status``: at least one
    path for every three lines), else none."""
    paths = [p for p in paths_in(output) if not p.startswith("/") or p.count("/") > 1]
    return paths if paths and len(paths) * 3 >= len(lines) else []


def _bash(inp: dict[str, Any], text: str, extra: dict[str, Any]) -> str:
    """The status, the failure lines, the paths of a listing, the first and last lines: in that
    order, so the trim to the observation's budget drops the least useful part first. The
    command is only named short: the tool call beside the result holds it whole."""
    command = _clip(str(inp.get("command", "?")), 60)
    stdout = str(extra.get("stdout", text)) if extra else text
    stderr = str(extra.get("stderr", "")) if extra else ""
    exit_match = _EXIT.search(text[:200])
    if extra and extra.get("interrupted"):
        status = "interrupted"
    elif exit_match:
        status = f"exit {exit_match.group(1)}"
    else:
        status = "ok"
    output = stdout + ("\n" + stderr if stderr else "")
    lines = [ln for ln in _lines(output) if ln.strip()]
    out = [f"$ {command}: {status}, {len(lines)} lines"]
    errors = _error_lines(output)
    if errors:  # the last ones: a test summary, the error and its location come at the end
        more = f"(+{len(errors) - 3} earlier) " if len(errors) > 3 else ""
        out.append("errors: " + more + " | ".join(_clip(e, 100) for e in errors[-3:]))
    paths = _listed(output, lines)
    listing = _listing(paths, 500) if paths else ""
    said = set(errors[-3:])
    if len(lines) > 4 and not listing and lines[0].strip() not in said:
        out.append("first: " + _clip(lines[0], 100))
    # the last lines, less what is said above already (the failure lines, listed paths)
    tail = [
        _clip(ln, 100)
        for ln in _tail(lines, 3)
        if ln not in said
        and not (
            (named := paths_in(ln))
            and all(p in listing for p in named)
            and len(ln) < 2 * len(" ".join(named)) + 16
        )
    ]
    if listing:  # the paths are what a listing says: before its last lines
        out.append("paths: " + listing)
    if tail:
        out.append("last: " + " | ".join(tail))
    return "\n".join(out)


_GREP_HIT = re.compile(r"^(.+?)[:-](\d+)[:-]")


def _grep(inp: dict[str, Any], text: str, extra: dict[str, Any]) -> str:
    lines = [ln for ln in _lines(text) if ln.strip() and not ln.startswith("Found ")]
    head = f"Grep '{inp.get('pattern', '?')}'" + (f" in {inp['path']}" if inp.get("path") else "")
    hits: dict[str, list[str]] = {}
    for ln in lines:  # content mode: file:line:text
        m = _GREP_HIT.match(ln)
        if m:
            hits.setdefault(m.group(1), []).append(m.group(2))
    if hits:
        shown = [f"{f}:{','.join(n[:8])}{'…' if len(n) > 8 else ''}" for f, n in hits.items()]
        return f"{head}: {len(lines)} lines in {len(hits)} files: " + _listing(shown, 900)
    counts = Counter(ln.split(":", 1)[0].strip() for ln in lines if ":" in ln)
    if counts and len(counts) < len(lines):  # count mode: file:N
        return f"{head}: {len(counts)} files: " + _listing([f"{f} ({n})" for f, n in counts.items()], 900)
    files = [ln.strip() for ln in lines]  # files-with-matches mode
    return f"{head}: {len(files)} files: " + _listing(files, 900)


def _glob(inp: dict[str, Any], text: str, extra: dict[str, Any]) -> str:
    files = [ln.strip() for ln in _lines(text) if ln.strip()]
    out = f"Glob '{inp.get('pattern', '?')}': {len(files)} files"
    return out + (": " + _listing(files, 900) if files else "")


def _edit(inp: dict[str, Any], text: str, extra: dict[str, Any]) -> str:
    path = inp.get("file_path", "?")
    if "content" in inp:  # Write
        return f"Wrote {path} ({len(str(inp['content']).splitlines())} lines)"
    raw_edits = inp.get("edits")
    edits: list[dict[str, Any]] = (
        [e for e in raw_edits if isinstance(e, dict)] if isinstance(raw_edits, list) else [inp]
    )
    removed = sum(len(str(e.get("old_string", "")).splitlines()) for e in edits)
    added = sum(len(str(e.get("new_string", "")).splitlines()) for e in edits)
    return f"Edited {path}: {len(edits)} edit(s), -{removed} +{added} lines"


def _task(inp: dict[str, Any], text: str, extra: dict[str, Any]) -> str:
    what = inp.get("description") or inp.get("subagent_type") or "subagent"
    paragraphs = [p.strip() for p in text.strip().split("\n\n") if p.strip()]
    # The conclusion comes last: keep the end, and the opening line for what was asked.
    kept: list[str] = []
    used = 0
    for para in reversed(paragraphs[1:]):
        if used + len(para) > 900:
            break
        kept.insert(0, para)
        used += len(para)
    first = _clip(paragraphs[0], 200) if paragraphs else ""
    gap = "…\n" if len(kept) < len(paragraphs) - 1 else ""
    return f"Subagent '{what}' answered:\n{first}\n{gap}" + "\n\n".join(kept)


def _webfetch(inp: dict[str, Any], text: str, extra: dict[str, Any]) -> str:
    status = extra.get("code") or extra.get("status") if extra else None
    paragraphs = [p.strip() for p in text.split("\n\n") if p.strip()]
    head = f"Fetched {inp.get('url', '?')}" + (f" (HTTP {status})" if status else "")
    kept: list[str] = []  # the first paragraphs, not only the heading
    used = 0
    for para in paragraphs:
        if kept and used + len(para) > 900:
            break
        kept.append(para[:900])
        used += len(para)
    return f"{head}, {len(text):,} chars" + (":\n" + "\n\n".join(kept) if kept else "")


def _generic(name: str) -> Callable[[dict[str, Any], str, dict[str, Any]], str]:
    """MCP tools and anything unknown: name, size, the first and last lines."""

    def build(inp: dict[str, Any], text: str, extra: dict[str, Any]) -> str:
        lines = [ln for ln in _lines(text) if ln.strip()]
        if len(lines) <= 6:
            return f"{name}: " + " | ".join(_clip(ln) for ln in lines)
        return f"{name} returned {len(lines)} lines: " + " | ".join([*_head(lines, 3), "…", *_tail(lines, 3)])

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


def _redacted(fields: dict[str, Any]) -> dict[str, Any]:
    """A copy with every string value redacted (tool input, ``toolUseResult`` / ``tool_response``)."""
    return {key: redact(value) if isinstance(value, str) else value for key, value in fields.items()}


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
    original_tokens: int | None = None,
) -> Observation:
    original = fast_count(result_text) if original_tokens is None else original_tokens
    # Redacted whole, before any builder cuts a line or keeps a tail: a key cut in half, or the
    # last lines of a key block, no longer match a pattern.
    inp = _redacted(tool_input) if isinstance(tool_input, dict) else {}
    result_text = redact(result_text)
    extra = _redacted(extra) if isinstance(extra, dict) else None
    if is_error:
        limit = min(max_tokens, max(FAILURE_FLOOR, int(original * FAILURE_SHARE)))
    else:
        listing = tool_name in ("Glob", "Grep") or (
            tool_name == "Bash"
            and bool(_listed(result_text, [ln for ln in _lines(result_text) if ln.strip()]))
        )
        share = LISTING_SHARE if listing else BUDGET_SHARE
        # an output with failures in it keeps room for them and its summary, however short
        floor = FAILURE_FLOOR // 2 if _error_lines(result_text) else BUDGET_FLOOR
        limit = min(max_tokens, max(floor, int(original * share)))
    if is_error:  # errors verbatim, up to the budget; past it, the first line and the tail
        body = _failure(f"{tool_name} failed: {result_text.strip()}", limit)
    else:
        builder = BUILDERS.get(tool_name) or _generic(tool_name)
        try:
            body = builder(inp, result_text, extra or {})
        except Exception:  # an odd shape must not lose the observation
            body = _generic(tool_name)(inp, result_text, {})
    # Once more on what was built (it joins pieces: cheap, and a pattern may span them), then cut.
    text = _trim(redact(body), limit)
    return Observation(
        tool_use_id=tool_use_id,
        tool_name=tool_name,
        text=text,
        original_tokens=original,
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
