"""Resume quality (issue: continuity): what the brain hands back after a compaction, side by side
with Claude Code's own summary of the same moment.

Every transcript in ../shared/fixtures/claude-code is replayed line by line into a temp copy;
the real hooks run as Claude Code runs them (``infinite-context hook pre-compact`` with the JSON
payload on stdin, as a subprocess, offline merger): every 20 tool uses and right before each
real compaction. At a compaction point ``hook session-start`` (source ``compact``) gives exactly
the text Claude Code would inject, and it is scored (``resume_score.py``) next to the
``isCompactSummary`` entry Claude Code wrote there. Transcripts without a compaction are scored
at their end (no summary to compare with).

Run: ``python benchmarks/run.py --only resume`` (or ``make bench``).
Goals: every work-in-progress id and every file edited in the last 20 tool uses named, 0 markup,
0 stale questions, resume <= 2,000 tokens.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
from common import console, table
from resume_score import Score, current_work, identifiers, moment, score

from infinite_context_brain.core.tokens import count_tokens

FIXTURES = Path(__file__).resolve().parents[2] / "shared" / "fixtures" / "claude-code"
EVERY = 20


@dataclass
class Point:
    transcript: str
    line: int
    kind: str  # "compaction" or "end"
    ours: Score
    ours_tokens: int
    claude: Score | None
    claude_tokens: int
    work_ids: list[str]
    resume: str


def transcripts() -> list[Path]:
    return sorted(p for p in FIXTURES.rglob("*.jsonl") if "subagents" not in p.parts)


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


def _replay(path: Path, work: Path) -> list[Point]:
    project = work / "project"  # the replay folder: none of the transcript's files exist here
    project.mkdir()
    (project / ".git").mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("INFINITE_CONTEXT_", "CLAUDE"))}
    env.update(
        INFINITE_CONTEXT_STORE_URL=f"sqlite:///{work / 'brain.db'}",
        INFINITE_CONTEXT_DATA_DIR=str(work / "data"),
        INFINITE_CONTEXT_MERGE="offline",
        CLAUDE_PROJECT_DIR=str(project),
    )
    copy = work / "transcript.jsonl"
    payload = {"session_id": "replay", "transcript_path": str(copy), "cwd": str(project)}
    raw = path.read_bytes().splitlines(keepends=True)
    parsed: list[dict[str, Any]] = []
    points: list[Point] = []
    uses = 0
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
                resume = _resume(payload, env)
                summary = next(
                    (
                        _summary_text(o)
                        for o in map(orjson.loads, raw[number : number + 5])
                        if isinstance(o, dict) and o.get("isCompactSummary")
                    ),
                    "",
                )
                points.append(_point(path, number, "compaction", parsed, resume, summary))
                uses = 0
            out.write(line)
            out.flush()
            parsed.append(obj)
            uses += _main_chain_uses(obj)
            if obj.get("type") == "user" and uses >= EVERY:
                _hook("pre-compact", {**payload, "hook_event_name": "PreCompact", "trigger": "auto"}, env)
                uses = 0
    _hook("pre-compact", {**payload, "hook_event_name": "PreCompact", "trigger": "manual"}, env)
    points.append(_point(path, len(raw) + 1, "end", parsed, _resume(payload, env), ""))
    return points


def _resume(payload: dict[str, Any], env: dict[str, str]) -> str:
    out = _hook("session-start", {**payload, "hook_event_name": "SessionStart", "source": "compact"}, env)
    if not out.strip():
        return ""
    return str(orjson.loads(out)["hookSpecificOutput"]["additionalContext"])


def _point(path: Path, line: int, kind: str, seen: list[dict[str, Any]], resume: str, summary: str) -> Point:
    at = moment(seen, EVERY)
    work_ids = identifiers(current_work(summary)) if summary else []
    return Point(
        transcript=str(path.resolve().relative_to(FIXTURES))
        if path.resolve().is_relative_to(FIXTURES)
        else path.name,
        line=line,
        kind=kind,
        ours=score(resume, at, work_ids),
        ours_tokens=count_tokens(resume),
        claude=score(summary, at, work_ids) if summary else None,
        claude_tokens=count_tokens(summary),
        work_ids=work_ids,
        resume=resume,
    )


def _ratio(found: int, total: int) -> str:
    return f"{found}/{total}" if total else "-"


def run(show: bool = False) -> list[Point]:
    points = [p for path in transcripts() for p in replay(path)]
    rows: list[tuple[object, ...]] = []
    for p in points:
        for who, s, tokens in (("ours", p.ours, p.ours_tokens), ("Claude Code", p.claude, p.claude_tokens)):
            if s is None:
                continue
            rows.append(
                (
                    p.transcript[:48],
                    f"{p.kind}@{p.line}",
                    who,
                    _ratio(s.ids_found, s.ids_total),
                    _ratio(s.files_found, s.files_total),
                    _ratio(s.failures_named, s.failures_total),
                    s.markup,
                    s.stale_questions,
                    f"{s.chars:,} / {tokens:,}",
                )
            )
    table(
        "Resume quality: our SessionStart text after a compaction vs Claude Code's summary "
        "(goals: all ids and files named, 0 markup, 0 stale, <= 2,000 tokens)",
        [
            "transcript",
            "point",
            "text",
            "work-in-progress ids",
            "files edited, last 20 uses",
            "unresolved failures",
            "markup",
            "stale questions",
            "chars / tokens",
        ],
        rows,
    )
    compactions = [p for p in points if p.kind == "compaction"]
    met = sum(
        p.ours.ids_found == p.ours.ids_total
        and p.ours.files_found == p.ours.files_total
        and p.ours.markup == 0
        and p.ours.stale_questions == 0
        and p.ours_tokens <= 2000
        for p in compactions
    )
    console.print(f"compaction points meeting every goal: {met}/{len(compactions)}")
    if show:
        for p in points:
            console.print(f"\n--- {p.transcript} {p.kind}@{p.line} ---\n{p.resume}", markup=False)
    return points


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    run(show="--show" in sys.argv)
