"""Reading a free-text checkpoint context into facts the offline merger can place.

People (and models) write checkpoints in two styles: labelled (``Current task: ...``,
``Decisions:`` followed by bullets) and plain prose (``Fixed the login bug in auth.py. We'll
use Redis for the cache. Next: rate limiting.``). Labels win; prose is classified sentence by
sentence with the cue words below. Everything here is pure and deterministic.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from ..facts import ContextFacts, DecisionFact, Failure, QuestionFact

# A label at the start of a line, optionally as a markdown heading or bold.
_LABELS: dict[str, str] = {
    "overview": "overview",
    "project": "overview",
    "summary": "overview",
    "architecture": "architecture",
    "design": "architecture",
    "stack": "architecture",
    "current task": "task",
    "task": "task",
    "goal": "task",
    "user request": "task",
    "request": "task",
    "working on": "task",
    "next": "next",
    "next step": "next",
    "next steps": "next",
    "remaining": "next",
    "left to do": "next",
    "in progress": "progress",
    "subtask": "progress",
    "blocker": "blocker",
    "blockers": "blocker",
    "blocked": "blocker",
    "failing": "blocker",
    "now": "task",
    "todo": "task",
    "done": "done",
    "completed": "done",
    "changes": "done",
    "changed": "done",
    "finished": "done",
    "decision": "decision",
    "decisions": "decision",
    "decided": "decision",
    "question": "question",
    "questions": "question",
    "open question": "question",
    "open questions": "question",
    "pending": "question",
    "files": "files",
    "files touched": "files",
    "files edited": "files",
    "active files": "files",
}
_LABEL_RE = re.compile(
    r"^\s*(?:#{1,6}\s*)?(?:\*\*|__)?("
    + "|".join(sorted(map(re.escape, _LABELS), key=len, reverse=True))
    + r")"
    r"(?:\*\*|__)?\s*(?::|-|—)\s*(?:\*\*|__)?(.*)$",
    re.I,
)
_HEADING_RE = re.compile(
    r"^\s*(?:#{1,6}\s*)?(?:\*\*|__)?("
    + "|".join(sorted(map(re.escape, _LABELS), key=len, reverse=True))
    + r")"
    r"(?:\*\*|__)?\s*:?\s*$",
    re.I,
)
_BULLET_RE = re.compile(r"^\s*(?:[-*+•]|\d+[.)]|\[[ xX]\])\s+")
_SENTENCE_SPLIT = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9`\"'(\[])")

DECISION_CUES = re.compile(
    r"\b(decided|decision|going with|go with|we'?ll use|we will use|will use|chose|chosen|choose|"
    r"opted (?:for|to)|settled on|approach:|agreed)\b",
    re.I,
)
QUESTION_START = re.compile(
    r"^(should we|should i|do we|shall we|which|whether|open question|undecided|tbd|to decide|"
    r"need to decide|not sure (?:whether|if|which))\b",
    re.I,
)
COMPLETION_CUES = re.compile(
    r"\b(done|fixed|implemented|completed|complete|finished|resolved|merged|shipped|landed|"
    r"added|wrote|created|removed|refactored|renamed|migrated|now passes|all tests pass|passing)\b",
    re.I,
)
TASK_CUES = re.compile(
    r"^(?:i'?m |we'?re |i am |we are )?(?:now |currently |next,? )?"
    r"(working on|going to|about to|need to|needs to|have to|must|next step is|plan is to|"
    r"trying to|let'?s|implement|add|fix|build|write|refactor|investigate|debug)\b",
    re.I,
)

# Paths: optional ./ or ../ or /, segments, and either an extension or at least one slash.
_PATH_RE = re.compile(
    r"(?<![\w@:/.\-])((?:~|\.{1,2})?/?(?:[\w.\-]+/)*[\w\-][\w.\-]*\.[A-Za-z0-9]{1,10}"
    r"|(?:~|\.{1,2})?/?(?:[\w.\-]+/)+[\w.\-]+)"
    r"(?::\d+(?::\d+)?)?"
)
_EXTENSIONLESS = {
    "Makefile",
    "Dockerfile",
    "Justfile",
    "Procfile",
    "Gemfile",
    "Rakefile",
    "LICENSE",
    "README",
}
MAX_PATH_CANDIDATES = 500


@dataclass
class Extracted:
    overview: list[str] = field(default_factory=list)
    architecture: list[str] = field(default_factory=list)
    tasks: list[str] = field(default_factory=list)
    completions: list[str] = field(default_factory=list)
    decisions: list[str] = field(default_factory=list)
    questions: list[str] = field(default_factory=list)
    prose: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    explicit_files: list[str] = field(default_factory=list)
    next_steps: list[str] = field(default_factory=list)
    in_progress: list[str] = field(default_factory=list)
    blockers: list[str] = field(default_factory=list)


def clean_sentence(text: str, limit: int = 400) -> str:
    text = _BULLET_RE.sub("", text).strip().strip("*_ ").strip()
    text = re.sub(r"\s+", " ", text)
    if len(text) > limit:
        cut = text[:limit].rsplit(" ", 1)[0]
        text = cut.rstrip(",;:") + "…"
    return text


def sentences(text: str) -> list[str]:
    out: list[str] = []
    for part in _SENTENCE_SPLIT.split(text):
        part = clean_sentence(part)
        if len(part) >= 3:
            out.append(part)
    return out


def classify(sentence: str) -> str:
    """One of decision / question / completion / task / prose."""
    if sentence.endswith("?") or QUESTION_START.search(sentence):
        return "question"
    if DECISION_CUES.search(sentence):
        return "decision"
    if TASK_CUES.search(sentence):
        return "task"
    if COMPLETION_CUES.search(sentence):
        return "completion"
    return "prose"


def _bucket(result: Extracted, kind: str) -> list[str]:
    return {
        "overview": result.overview,
        "architecture": result.architecture,
        "task": result.tasks,
        "done": result.completions,
        "completion": result.completions,
        "decision": result.decisions,
        "question": result.questions,
        "prose": result.prose,
        "files": result.explicit_files,
        "next": result.next_steps,
        "progress": result.in_progress,
        "blocker": result.blockers,
    }[kind]


def extract(text: str, project_root: Path) -> Extracted:
    result = Extracted()
    section: str | None = None
    for raw_line in text.splitlines():
        line = raw_line.strip()
        if not line:
            section = None
            continue
        heading = _HEADING_RE.match(line)
        if heading:
            section = _LABELS[heading.group(1).lower()]
            continue
        in_section = section is not None and not _LABEL_RE.match(line)
        if in_section and (_BULLET_RE.match(raw_line) or section in {"overview", "architecture"}):
            assert section is not None
            if section == "files":
                result.explicit_files.append(line)
            elif item := clean_sentence(line):
                _bucket(result, section).append(item)
            continue
        section = None
        # Labels may open a line or a sentence ("Fixed X. Next: add Y."). Prose that follows an
        # overview/architecture label on the same line belongs to it; the sentences after a task,
        # done, decision or question label continue that item ("Current task: add f. Test it.").
        carry: str | None = None
        for sentence in sentences(line):
            labelled = _LABEL_RE.match(sentence)
            if labelled:
                kind = _LABELS[labelled.group(1).lower()]
                body = labelled.group(2).strip()
                carry = kind if kind != "files" and body else None
                if not body:
                    section = kind
                elif kind == "files":
                    result.explicit_files.append(body)
                else:
                    _bucket(result, kind).append(clean_sentence(body))
                continue
            kind = classify(sentence)
            if carry in {"overview", "architecture"} and kind == "prose":
                _bucket(result, carry).append(sentence)
            elif (
                carry is not None
                and carry not in {"overview", "architecture"}
                and (carry == "task" or kind in {"prose", carry})
            ):
                bucket = _bucket(result, carry)
                bucket[-1] = f"{bucket[-1]} {sentence}".strip()
            else:
                _bucket(result, kind).append(sentence)
    result.files = find_files(text, project_root)
    return result


def find_files(text: str, project_root: Path) -> list[str]:
    """Paths mentioned in ``text`` that exist as files inside ``project_root``, as relative
    POSIX paths in order of first mention."""
    root = project_root.resolve()
    seen: set[str] = set()
    found: list[str] = []
    candidates = 0
    tokens = [m.group(1) for m in _PATH_RE.finditer(text)]
    tokens += [w for w in re.findall(r"\b[A-Z][A-Za-z]+\b", text) if w in _EXTENSIONLESS]
    for token in tokens:
        token = token.rstrip(".,;:)]}'\"`")
        if not token or token in seen or "://" in token:
            continue
        seen.add(token)
        candidates += 1
        if candidates > MAX_PATH_CANDIDATES:
            break
        rel = relative_file(token, root)
        if rel is not None and rel not in found:
            found.append(rel)
    return found


def relative_file(token: str, root: Path) -> str | None:
    """``token`` as a path relative to ``root`` if it names an existing file inside it."""
    try:
        path = Path(token).expanduser()
        path = path if path.is_absolute() else root / path
        resolved = path.resolve()
        rel = resolved.relative_to(root)
    except (ValueError, OSError, RuntimeError):
        return None
    try:
        return rel.as_posix() if resolved.is_file() else None
    except OSError:
        return None


def facts_from_text(text: str, project_root: Path) -> ContextFacts:
    """The facts a free-text checkpoint states (labelled lines and classified prose).

    Files named in passing count only when they exist (prose cannot tell a path from a word);
    files listed under an explicit label are kept when missing too, if they lie inside the
    project, so the merger can say they are not on disk instead of dropping them silently."""
    found = extract(text, project_root)
    root = project_root.resolve()
    listed: list[str] = []
    for chunk in found.explicit_files:
        for token in chunk.replace(";", ",").split(","):
            token = token.strip().strip("`'\"")
            if not token:
                continue
            rel = relative_file(token, root) or _inside(token, root)
            if rel is not None and rel not in listed:
                listed.append(rel)
    return ContextFacts(
        source="text",
        requests=found.tasks,
        in_progress=found.in_progress[-1] if found.in_progress else "",
        files_mentioned=list(dict.fromkeys([*listed, *found.files])),
        failures=[Failure(check=b, stated=True) for b in found.blockers],
        decisions=[DecisionFact(decision=d) for d in found.decisions],
        questions=[QuestionFact(text=q) for q in found.questions],
        completions=found.completions,
        next_steps=found.next_steps,
        overview=found.overview,
        architecture=found.architecture,
        notes=found.prose,
    )


def _inside(token: str, root: Path) -> str | None:
    """``token`` as a root-relative path if it names a place inside ``root`` (existing or not)."""
    if "://" in token or not re.fullmatch(r"[\w./~\-]+", token):
        return None
    path = Path(token).expanduser()
    path = path if path.is_absolute() else root / path
    try:
        return Path(os.path.normpath(path)).relative_to(root).as_posix()
    except ValueError:
        return None
