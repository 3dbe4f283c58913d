"""Scoring a resume text against what a transcript shows at one moment (resume-quality benchmark).

Deliberately independent of the product's own extraction (no import from infinite_context_brain's
digest): the scorer reads the raw transcript lines and Claude Code's compaction summary with its
own simple rules, so the product is not graded by the rules it is built on.

* work-in-progress identifiers: issue ids (``spotter-gqc.6``, ``#12``, ``ABC-123``), test names
  (``test_x``) and file names (``transcript_components.ex``) that Claude Code's summary names in
  its "Current Work" part;
* files edited in the last 20 tool uses (by base name);
* unresolved failures: shell runs that failed (``is_error``; a rejected call or git's "nothing to
  commit" is no failure) with no later success of the same command (pipes, redirections and
  ``cd`` prefixes ignored; ``git <sub>`` by its subcommand);
* markup: Claude Code wrapper tags or interrupt markers in the text;
* stale questions: open questions in the text that the assistant asked and the user answered.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

EDIT_TOOLS = {"Edit", "Write", "MultiEdit", "NotebookEdit"}
CODE_EXTENSIONS = (
    "py ex exs js ts tsx jsx mjs cjs json md rs go rb java kt swift c h cc cpp hpp cs php sh toml yaml yml "
    "css scss html heex eex sql lock cfg ini txt proto vue svelte"
).split()
_FILE = re.compile(r"(?<![\w/.-])((?:[\w.-]+/)*[\w.-]+\.(?:" + "|".join(CODE_EXTENSIONS) + r"))\b")
_ISSUE = re.compile(r"(?<![\w.-])([a-z][a-z0-9]*-[a-z0-9]+(?:\.\d+)+|#\d+|[A-Z][A-Z0-9]+-\d+)(?![\w-])")
_TEST = re.compile(r"\b(test_\w+)\b")
_MARKUP = re.compile(r"</?[a-z][a-z0-9]*(?:[-_][a-z0-9]+)+(?:\s[^>]*)?>|\[Request interrupted")
_HEADING = r"^[ \t]*(?:#{1,6}[ \t]*)?(?:\*\*)?[ \t]*\d{1,2}\.[ \t]*(?:\*\*)?[ \t]*"
_NEXT_HEADING = re.compile(_HEADING + r"[A-Z][\w &/()-]*:?[ \t]*(?:\*\*)?[ \t]*:?[ \t]*$", re.M)
_CODE = re.compile(r"`([^`\n]{2,80})`")
_CAMEL = re.compile(r"(?<![\w./-])([A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+|[a-z]+(?:[A-Z][a-z0-9]+)+)(?![\w-])")
_SNAKE = re.compile(r"(?<![\w./-])([a-z][a-z0-9]*(?:_[a-z0-9]+)+)(?![\w-])")
_HOST = re.compile(r"\b(\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?|localhost:\d+)\b")
_WORDS_OF_CODE = re.compile(r"[A-Za-z_][\w.:/-]*[\w]")


def part(summary: str, name: str) -> str:
    """One numbered part of a Claude Code compaction summary ("Current Work", "Pending Tasks",
    "Optional Next Step"), by a word of its heading; "" when absent. Headings come as ``8. Current
    Work:``, ``**8. Current Work:**`` or ``## 8. Current Work``; the analysis drafts before the
    summary repeat them, so the last heading of that name counts."""
    headings = [
        m
        for m in re.finditer(_HEADING + r"([A-Z][^\n]*)$", summary, re.M)
        if name.lower() in m.group(1).lower()
    ]
    if not headings:
        return ""
    rest = summary[headings[-1].end() :]
    following = _NEXT_HEADING.search(rest)
    body = rest[: following.start()] if following else rest
    return body.split("If you need specific details from before compaction")[0]


def current_work(summary: str) -> str:
    """The "Current Work" part of a Claude Code compaction summary (all of it when absent)."""
    return part(summary, "current work") or summary


def work_parts(summary: str) -> str:
    """The pending tasks, current work and next step of a summary: what a next session needs."""
    return "\n".join(part(summary, name) for name in ("pending", "current work", "next step"))


def identifiers(text: str) -> list[str]:
    """Key identifiers: issue ids, test names, file names, code in backticks (each of its words
    that look like code), CamelCase and snake_case names, hosts with ports."""
    found = [m.group(1) for m in _ISSUE.finditer(text)]
    found += [m.group(1) for m in _TEST.finditer(text)]
    found += [m.group(1).rsplit("/", 1)[-1] for m in _FILE.finditer(text)]
    for code in _CODE.finditer(text):
        for word in _WORDS_OF_CODE.findall(code.group(1)):
            word = word.rsplit("/", 1)[-1]
            if len(word) >= 4 and re.search(r"[A-Z_.(:]|\d", word[1:]):
                found.append(word)

    found += [m.group(1) for m in _CAMEL.finditer(text)]
    found += [m.group(1) for m in _SNAKE.finditer(text)]
    found += [m.group(1) for m in _HOST.finditer(text)]
    return list(dict.fromkeys(f for f in found if len(f) >= 3))


def _command_key(command: str) -> str:
    command = command.split("\n", 1)[0]
    command = re.sub(r"^\s*cd\s+\S+\s*&&\s*", "", command)
    command = re.sub(r"\s*\|.*$", "", command)
    command = re.sub(r"\s*\d?>&\d|\s*\d?>>?\s*\S+", "", command)
    words = command.split()
    if words[:1] == ["git"]:
        return " ".join(words[:2])
    return " ".join(words)


@dataclass
class Moment:
    """What the transcript shows up to one point (main chain only)."""

    edited_recently: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    answered_questions: list[str] = field(default_factory=list)


def _blocks(obj: dict[str, Any]) -> list[dict[str, Any]]:
    message = obj.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def moment(lines: list[dict[str, Any]], recent_uses: int = 20) -> Moment:
    uses: list[tuple[str, str, dict[str, Any]]] = []
    failing: dict[str, str] = {}
    commands: dict[str, str] = {}
    asked: str | None = None
    answered: list[str] = []
    for obj in lines:
        if obj.get("isSidechain"):
            continue
        kind = obj.get("type")
        if kind == "assistant":
            blocks = _blocks(obj)
            for block in blocks:
                if block.get("type") == "tool_use":
                    data = block.get("input") if isinstance(block.get("input"), dict) else {}
                    uses.append((str(block.get("id")), str(block.get("name")), data))
                    if block.get("name") == "Bash" and isinstance(data.get("command"), str):
                        commands[str(block.get("id"))] = _command_key(data["command"])
            texts = [b.get("text", "") for b in blocks if b.get("type") == "text"]
            if texts and not any(b.get("type") == "tool_use" for b in blocks) and "?" in texts[-1]:
                asked = texts[-1]
        elif kind == "user":
            content = (
                (obj.get("message") or {}).get("content") if isinstance(obj.get("message"), dict) else None
            )
            if isinstance(content, str) and asked and not obj.get("isMeta"):
                answered.append(asked)
                asked = None
            for block in _blocks(obj):
                if block.get("type") != "tool_result" or str(block.get("tool_use_id")) not in commands:
                    continue
                key = commands[str(block.get("tool_use_id"))]
                text = block.get("content") if isinstance(block.get("content"), str) else ""
                rejected = str(text).startswith("The user doesn't want") or "nothing to commit" in str(text)
                if block.get("is_error") and not rejected:
                    failing[key] = key
                else:
                    failing.pop(key, None)
    edited: list[str] = []
    for _id, name, data in uses[-recent_uses:]:
        path = data.get("file_path") or data.get("notebook_path")
        if name in EDIT_TOOLS and isinstance(path, str):
            base = path.rsplit("/", 1)[-1]
            if base not in edited:
                edited.append(base)
    return Moment(edited_recently=edited, failures=list(failing), answered_questions=answered)


def failure_named(check: str, text: str) -> bool:
    """A failure is named when its command's most specific word (a file, else the tool and
    subcommand) appears in the text."""
    words = check.split()
    files = [w.rsplit("/", 1)[-1] for w in words if _FILE.search(w)]
    return all(f in text for f in files) if files else " ".join(words[:2]) in text


@dataclass
class Score:
    ids_found: int
    ids_total: int
    files_found: int
    files_total: int
    failures_named: int
    failures_total: int
    markup: int
    stale_questions: int
    chars: int


def score(text: str, at: Moment, work_ids: list[str]) -> Score:
    stale = sum(
        1
        for line in text.splitlines()
        if line.lstrip().startswith("- [open]")
        and any(line.split("]", 1)[1].split("(you asked")[0].strip() in q for q in at.answered_questions)
    )
    return Score(
        ids_found=sum(i in text for i in work_ids),
        ids_total=len(work_ids),
        files_found=sum(f in text for f in at.edited_recently),
        files_total=len(at.edited_recently),
        failures_named=sum(failure_named(c, text) for c in at.failures),
        failures_total=len(at.failures),
        markup=len(_MARKUP.findall(text)),
        stale_questions=stale,
        chars=len(text),
    )


@dataclass
class Truth:
    """A resume against a hand-written ground truth (``data/resume_truth.json``)."""

    request: int
    request_total: int
    subtask: int
    subtask_total: int
    next_found: int
    next_total: int
    decisions_found: int
    decisions_total: int
    stale: int
    missed: list[str] = field(default_factory=list)
    wrong: list[str] = field(default_factory=list)


def _any(patterns: list[str], text: str) -> bool:
    return any(re.search(p, text, re.I) for p in patterns)


def truth_score(text: str, truth: dict[str, Any]) -> Truth:
    """Each item of the ground truth counts when any of its patterns matches ``text``; a stale
    pattern that matches is a wrong or stale claim."""
    steps = truth.get("next_steps", [])
    decisions = truth.get("decisions", [])
    missed = [f"next: {s['label']}" for s in steps if not _any(s["any"], text)]
    missed += [f"decision: {d['label']}" for d in decisions if not _any(d["any"], text)]
    wrong = [s["label"] for s in truth.get("stale", []) if re.search(s["pattern"], text, re.I)]
    return Truth(
        request=int(_any(truth.get("request", []), text)),
        request_total=1 if truth.get("request") else 0,
        subtask=int(_any(truth.get("subtask", []), text)),
        subtask_total=1 if truth.get("subtask") else 0,
        next_found=sum(_any(s["any"], text) for s in steps),
        next_total=len(steps),
        decisions_found=sum(_any(d["any"], text) for d in decisions),
        decisions_total=len(decisions),
        stale=len(wrong),
        missed=missed,
        wrong=wrong,
    )
