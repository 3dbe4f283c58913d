"""Resume quality: what the brain hands back at every compaction point and session end of the real
Claude Code sessions in ../shared/fixtures/claude-code, side by side with Claude Code's own summary
of the same moment.

Every transcript is replayed line by line into a temp copy; the real hooks run as Claude Code runs
them (``infinite-context hook pre-compact`` with the JSON payload on stdin, as a subprocess,
offline merger): every 20 tool uses, right before each real compaction, and at the end. The text
scored is exactly what SessionStart would inject (``hook session-start``). Points:

* ``compaction``: right before Claude Code compacts, what a ``/clear`` then would give (the brain
  has only the transcript so far); Claude Code's summary written right after is the reference;
* ``compacted``: a ``/clear`` right after the compaction (SessionEnd hands off, reading Claude
  Code's summary, then SessionStart): what the next session gets when Claude Code keeps nothing;
* ``after``: the first hand-off after a compaction (the brain has read Claude Code's summary);

* ``end``: the end of the file, what the next session gets after ``/clear``.

Measures (``resume_score.py``, independent of the product's own reading): the request, the subtask,
next steps and decisions/gotchas a hand-written ground truth names (``data/resume_truth.json``,
written from the transcripts and Claude Code's summaries, not from the product's rules), the key
identifiers of Claude Code's summary's pending / current-work / next-step parts, files edited in
the last 20 tool uses, unresolved failures, wrong or stale claims (the ground truth's patterns,
plus markup and answered questions), size in tokens.

Run: ``python benchmarks/run.py --only resume`` (``--show`` prints every resume).
Goals: next steps >= 80%, decisions >= 70%, identifiers >= 85%, at most 1 wrong or stale claim per
session, resume <= 2,000 tokens, and after ``/clear`` the resume still holds what Claude Code's last
summary said.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
from common import console, table
from resume_score import Score, Truth, identifiers, moment, score, truth_score, work_parts

from infinite_context_brain.core.tokens import count_tokens
from infinite_context_brain.core.transcript.nudge import DEFAULT_SHARE
from infinite_context_brain.core.transcript.window import context_tokens, window_for

FIXTURES = Path(__file__).resolve().parents[2] / "shared" / "fixtures" / "claude-code"
TRUTH = Path(__file__).resolve().parent / "data" / "resume_truth.json"
EVERY = 20


@dataclass
class Point:
    transcript: str
    line: int
    kind: str  # "compaction", "after" or "end"
    ours: Score
    ours_tokens: int
    claude: Score | None
    claude_tokens: int
    work_ids: list[str]
    resume: str
    truth: Truth | None = None
    claude_truth: Truth | None = None
    #: identifiers of the last compaction summary before this point (for "after" and "end")
    summary_ids: list[str] = field(default_factory=list)


def transcripts() -> list[Path]:
    return sorted(p for p in FIXTURES.rglob("*.jsonl") if "subagents" not in p.parts)


def _truths() -> dict[str, Any]:
    return json.loads(TRUTH.read_text(encoding="utf-8"))["points"] if TRUTH.exists() else {}


def _hook(event: str, payload: dict[str, Any], env: dict[str, str]) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "infinite_context_brain.server", "hook", event],
        input=orjson.dumps(payload),
        capture_output=True,
        env=env,
        timeout=60,
        check=True,
    )
    return done.stdout.decode()


def _main_chain_uses(obj: dict[str, Any]) -> int:
    if obj.get("type") != "assistant" or obj.get("isSidechain"):
        return 0
    message = obj.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    return sum(1 for b in content or [] if isinstance(b, dict) and b.get("type") == "tool_use")


def _summary_text(obj: dict[str, Any]) -> str:
    content = (obj.get("message") or {}).get("content")
    if isinstance(content, str):
        return content
    return "\n".join(b.get("text", "") for b in content or [] if isinstance(b, dict))


def replay(path: Path) -> list[Point]:
    """Replay one transcript in a temp folder of its own, removed afterwards."""
    with tempfile.TemporaryDirectory(prefix="ic-resume-quality-") as tmp:
        return _replay(path, Path(tmp))


def _name(path: Path) -> str:
    resolved = path.resolve()
    return str(resolved.relative_to(FIXTURES)) if resolved.is_relative_to(FIXTURES) else path.name


def _replay(path: Path, work: Path) -> list[Point]:
    project = work / "project"  # the replay folder: none of the transcript's files exist here
    project.mkdir()
    (project / ".git").mkdir()
    home = work / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("INFINITE_CONTEXT_", "CLAUDE"))}
    env.update(
        HOME=str(home),
        INFINITE_CONTEXT_STORE_URL=f"sqlite:///{work / 'brain.db'}",
        INFINITE_CONTEXT_DATA_DIR=str(work / "data"),
        INFINITE_CONTEXT_MERGE="offline",
        CLAUDE_PROJECT_DIR=str(project),
    )
    copy = work / "transcript.jsonl"
    payload = {"session_id": "replay", "transcript_path": str(copy), "cwd": str(project)}
    raw = path.read_bytes().splitlines(keepends=True)
    truths = _truths().get(_name(path), {})
    parsed: list[dict[str, Any]] = []
    points: list[Point] = []
    uses = 0
    summary = ""  # Claude Code's latest summary
    awaiting_after = False
    compacted = ""  # the compaction whose summary comes next
    with open(copy, "wb") as out:
        for number, line in enumerate(raw, 1):
            try:
                obj = orjson.loads(line)
            except orjson.JSONDecodeError:
                obj = {}
            obj = obj if isinstance(obj, dict) else {}
            if obj.get("type") == "system" and obj.get("subtype") == "compact_boundary":
                # Claude Code runs PreCompact before it writes the boundary: hand off, then reload.
                _hook("pre-compact", {**payload, "hook_event_name": "PreCompact", "trigger": "auto"}, env)
                summary = next(
                    (
                        _summary_text(o)
                        for o in map(orjson.loads, raw[number : number + 5])
                        if isinstance(o, dict) and o.get("isCompactSummary")
                    ),
                    "",
                )
                key = f"compaction@{number}"
                before = _resume(payload, env, "clear")  # what a /clear right then would give
                points.append(_point(path, number, "compaction", parsed, before, summary, truths.get(key)))
                uses, awaiting_after, compacted = 0, bool(summary), key
            out.write(line)
            out.flush()
            parsed.append(obj)
            uses += _main_chain_uses(obj)
            if compacted and obj.get("isCompactSummary"):
                # A /clear right after the compaction: Claude Code runs SessionEnd (the hand-off
                # reads its summary), then SessionStart.
                _hook("session-end", {**payload, "hook_event_name": "SessionEnd", "reason": "clear"}, env)
                after = _resume(payload, env, "clear")
                points.append(
                    _point(path, number, "compacted", parsed, after, summary, truths.get(compacted))
                )
                compacted = ""
            if obj.get("type") == "user" and uses >= EVERY:
                _hook("pre-compact", {**payload, "hook_event_name": "PreCompact", "trigger": "auto"}, env)
                uses = 0
                if awaiting_after:
                    awaiting_after = False
                    points.append(_point(path, number, "after", parsed, _resume(payload, env), summary, None))
    _hook("pre-compact", {**payload, "hook_event_name": "PreCompact", "trigger": "manual"}, env)
    end = _point(path, len(raw) + 1, "end", parsed, _resume(payload, env), "", truths.get("end"))
    end.summary_ids = identifiers(work_parts(summary)) if summary else []
    points.append(end)
    return points


def _resume(payload: dict[str, Any], env: dict[str, str], source: str = "clear") -> str:
    out = _hook("session-start", {**payload, "hook_event_name": "SessionStart", "source": source}, env)
    if not out.strip():
        return ""
    return str(orjson.loads(out)["hookSpecificOutput"]["additionalContext"])


def _point(
    path: Path,
    line: int,
    kind: str,
    seen: list[dict[str, Any]],
    resume: str,
    summary: str,
    truth: dict[str, Any] | None,
) -> Point:
    at = moment(seen, EVERY)
    work_ids = identifiers(work_parts(summary)) if summary else []
    reference = summary if kind in {"compaction", "compacted"} else ""

    point = Point(
        transcript=_name(path),
        line=line,
        kind=kind,
        ours=score(resume, at, work_ids),
        ours_tokens=count_tokens(resume),
        claude=score(reference, at, work_ids) if reference else None,
        claude_tokens=count_tokens(reference),
        work_ids=work_ids,
        resume=resume,
    )
    if truth is not None:
        point.truth = truth_score(resume, truth)
        point.claude_truth = truth_score(reference, truth) if reference else None
    if kind == "after":
        point.summary_ids = work_ids
    return point


def _ratio(found: int, total: int) -> str:
    return f"{found}/{total}" if total else "-"


def _row(p: Point, who: str, s: Score, t: Truth | None, tokens: int) -> tuple[object, ...]:
    return (
        p.transcript[:44],
        f"{p.kind}@{p.line}",
        who,
        _ratio(t.request, t.request_total) if t else "",
        _ratio(t.subtask, t.subtask_total) if t else "",
        _ratio(t.next_found, t.next_total) if t else "",
        _ratio(t.decisions_found, t.decisions_total) if t else "",
        _ratio(s.ids_found, s.ids_total),
        _ratio(s.files_found, s.files_total),
        _ratio(s.failures_named, s.failures_total),
        (t.stale if t else 0) + s.markup + s.stale_questions,
        f"{tokens:,}",
    )


def run(show: bool = False) -> list[Point]:
    points = [p for path in transcripts() for p in replay(path)]
    rows: list[tuple[object, ...]] = []
    for p in points:
        rows.append(_row(p, "ours", p.ours, p.truth, p.ours_tokens))
        if p.claude is not None:
            rows.append(_row(p, "Claude Code", p.claude, p.claude_truth, p.claude_tokens))
    table(
        "Resume quality: our SessionStart text vs Claude Code's own summary of the same moment",
        [
            "transcript",
            "point",
            "text",
            "request",
            "subtask",
            "next steps",
            "decisions / gotchas",
            "summary ids",
            "files, last 20 uses",
            "unresolved failures",
            "wrong / stale",
            "tokens",
        ],
        rows,
    )
    _totals(points)
    _asks(transcripts())
    if show:
        for p in points:
            console.print(f"\n--- {p.transcript} {p.kind}@{p.line} ---\n{p.resume}", markup=False)
    return points


def _share(found: int, total: int) -> str:
    return f"{found}/{total} ({100 * found / total:.0f}%)" if total else "-"


def _totals(points: list[Point]) -> None:
    rows = []
    for label, kinds in (
        ("compaction points: a /clear right before", {"compaction"}),
        ("compaction points: a /clear right after", {"compacted"}),
        ("session ends (after /clear)", {"end"}),
        ("all (compacted + ends)", {"compacted", "end"}),
    ):
        chosen = [p for p in points if p.kind in kinds and p.truth is not None]
        for who in ("ours", "Claude Code"):
            truths = [p.truth if who == "ours" else p.claude_truth for p in chosen]
            truths = [t for t in truths if t is not None]
            if not truths:
                continue
            rows.append(
                (
                    label,
                    who,
                    _share(sum(t.next_found for t in truths), sum(t.next_total for t in truths)),
                    _share(sum(t.decisions_found for t in truths), sum(t.decisions_total for t in truths)),
                    sum(t.stale for t in truths),
                )
            )
    table(
        "Against the hand-written ground truth "
        "(goals: next steps >= 80%, decisions >= 70%, <= 1 wrong/stale a session)",
        ["points", "text", "next steps", "decisions / gotchas", "wrong / stale claims"],
        rows,
    )
    compactions = [p for p in points if p.kind == "compaction"]
    compacted = [p for p in points if p.kind == "compacted"]
    after = [p for p in points if p.kind == "after"]
    ends = [p for p in points if p.kind == "end" and p.summary_ids]
    ids = [
        (
            "a /clear right before the compaction (Claude Code's summary: 100%)",
            compactions,
            lambda p: p.work_ids,
        ),
        ("a /clear right after the compaction", compacted, lambda p: p.work_ids),
        ("at the next hand-off after it", after, lambda p: p.summary_ids),
        ("at the session's end, after /clear (the last summary's ids)", ends, lambda p: p.summary_ids),
    ]
    id_rows = []
    for label, chosen, ids_of in ids:
        found = sum(sum(i in p.resume for i in ids_of(p)) for p in chosen)
        total = sum(len(ids_of(p)) for p in chosen)
        id_rows.append((label, len(chosen), _share(found, total)))
    table(
        "Identifiers of Claude Code's pending / current-work / next-step parts (goal >= 85%)",
        ["when", "points", "found"],
        id_rows,
    )
    biggest = max((p.ours_tokens for p in points), default=0)
    per_session: dict[str, int] = {}
    for p in points:
        if p.truth is not None:
            per_session[p.transcript] = per_session.get(p.transcript, 0) + p.truth.stale
    worst = max(per_session.values(), default=0)
    console.print(
        f"largest resume: {biggest:,} tokens (goal <= 2,000); most wrong/stale claims in one session: {worst}"
    )


def _asks(paths: list[Path]) -> None:
    """Where the hooks would have asked the model for its own checkpoint (``nudge``: once the
    context passes the share of the window, at the next tool result or end of a turn, once until
    the next compaction), replayed entry by entry: before how many of the real compactions, and how
    many of the model's steps (answers) ahead of it."""
    rows: list[tuple[object, ...]] = []
    asked_before = total = 0
    for path in paths:
        context, model, asked, steps_since = 0, "", None, 0
        for number, line in enumerate(path.read_bytes().splitlines(), 1):
            try:
                obj = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue
            if not isinstance(obj, dict):
                continue
            if obj.get("type") == "system" and obj.get("subtype") == "compact_boundary":
                total += 1
                asked_before += asked is not None
                rows.append(
                    (
                        _name(path),
                        number,
                        f"{asked[1]:.0%} of the window, at line {asked[0]}" if asked else "no",
                        steps_since if asked else "-",
                    )
                )
                context, asked, steps_since = 0, None, 0
                continue
            message = obj.get("message") if isinstance(obj.get("message"), dict) else {}
            usage = message.get("usage") if isinstance(message, dict) else None
            if obj.get("type") == "assistant" and not obj.get("isSidechain") and isinstance(usage, dict):
                now = context_tokens(usage)
                steps_since += asked is not None and now != context  # a new answer, not its next part
                context, model = now or context, str(message.get("model") or model)
            elif _prompt(obj) or _tool_result(obj):  # Claude Code ran Stop, or PostToolUse
                window = window_for(model, context)
                if asked is None and context >= DEFAULT_SHARE * window:
                    asked = (number, context / window)
    table(
        "The hooks' request for the model's own checkpoint before each real compaction "
        f"(past {DEFAULT_SHARE:.0%} of the window, once between compactions)",
        ["transcript", "compaction at line", "asked", "answers between the request and the compaction"],
        rows,
    )
    console.print(f"asked before {asked_before} of {total} compactions")


def _tool_result(obj: dict[str, Any]) -> bool:
    content = (obj.get("message") or {}).get("content")
    return (
        obj.get("type") == "user"
        and not obj.get("isSidechain")
        and isinstance(content, list)
        and any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content)
    )


def _prompt(obj: dict[str, Any]) -> bool:
    """A prompt a person typed (not a tool result, Claude Code's own turn or its summary)."""
    if (
        obj.get("type") != "user"
        or obj.get("isMeta")
        or obj.get("isCompactSummary")
        or obj.get("isSidechain")
    ):
        return False
    content = (obj.get("message") or {}).get("content")
    if isinstance(content, str):
        return bool(content.strip()) and not content.lstrip().startswith("<")
    return isinstance(content, list) and any(
        isinstance(b, dict)
        and b.get("type") == "text"
        and not str(b.get("text", "")).lstrip().startswith("<")
        for b in content
    )
