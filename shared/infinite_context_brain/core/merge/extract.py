"""Reading a free-text checkpoint into facts the offline merger can place.

People (and models) write checkpoints in two styles: labelled (``Current task: ...``, a
``## Decisions`` heading followed by bullets, ``- [ ]`` checklists) and plain prose (``Fixed the
login bug in auth.py. We'll use Redis for the cache. Next: rate limiting.``). Labels win; prose
is cut into clauses and each is read by its cue words (``clauses.py``). The text itself is kept
as written beside the facts (``ContextFacts.text``, the journal), so a clause no rule reads is
still there. Everything here is pure and deterministic.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from ..facts import ContextFacts, DecisionFact, Failure, Gotcha, QuestionFact
from .clauses import LABELS, LIST_KINDS, Kind, classify, clauses, decision_and_reason, list_items, sequence

_LABEL_NAMES = "|".join(sorted(map(re.escape, LABELS), key=len, reverse=True))
# A label at the start of a line or sentence, optionally as a markdown heading or bold.
_LABEL_RE = re.compile(
    r"^\s*(?:#{1,6}\s*)?(?:\*\*|__)?(" + _LABEL_NAMES + r")(?:\*\*|__)?\s*(?::|—|-\s)\s*(?:\*\*|__)?\s*(.*)$",
    re.I,
)
# A label alone on its line: a heading whose section follows (``## Next steps``, ``TODO:``).
_HEADING_RE = re.compile(
    r"^\s*(?:#{1,6}\s*)?(?:\*\*|__)?(" + _LABEL_NAMES + r")(?:\*\*|__)?\s*:?\s*(?:\*\*|__)?\s*:?\s*$",
    re.I,
)
_BULLET_RE = re.compile(r"^\s*(?:[-*+•]|\d{1,3}[.)]|\(\d{1,3}\))\s+")
_CHECKBOX_RE = re.compile(r"^\s*(?:[-*+]\s+)?\[([ xX✓✔-])\]\s+")
_SENTENCE_SPLIT = re.compile(r"(?<=[.!?])\s+(?=[A-Za-z0-9`\"'(\[*])")
#: kinds whose section also holds plain lines under its heading (not only bullets)
_LINE_SECTIONS: frozenset[Kind] = frozenset(
    {"task", "progress", "overview", "architecture", "note", "gotcha", "decision", "blocker", "files"}
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
    """What one checkpoint text states, by kind, in the order written."""

    items: dict[Kind, list[str]] = field(default_factory=dict)
    reasons: dict[str, str] = field(default_factory=dict)
    #: attempts stated against each blocker (by the blocker's text)
    tried: dict[str, list[str]] = field(default_factory=dict)
    files: list[str] = field(default_factory=list)

    def add(self, kind: Kind, text: str) -> None:
        text = clean_sentence(text)
        if not text:
            return

        if kind == "decision":
            text, reason = decision_and_reason(text)
            if reason:
                self.reasons[text] = reason
        if kind == "tried":
            blockers = self.items.get("blocker")
            if blockers:
                self.tried.setdefault(blockers[-1], []).append(text)
                return
        self.items.setdefault(kind, []).append(text)

    def of(self, kind: Kind) -> list[str]:
        return self.items.get(kind, [])


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
        part = clean_sentence(part, 2000)
        if len(part) >= 2:
            out.append(part)
    return out


class _Reader:
    """One pass over the lines; ``section`` is the heading the current lines sit under."""

    def __init__(self) -> None:
        self.out = Extracted()
        self.section: Kind | None = None
        self.section_lines = 0
        self.task_stated = False

    def labelled(self, kind: Kind, body: str) -> None:
        """A label's body: its first sentence is of the label's kind; the sentences after it are
        read on their own ("Done: login. Next: logout."), or continue a whole-text kind."""
        parts = sentences(body) if kind not in {"overview", "architecture"} else [body]
        if not parts:
            return
        if kind == "task":
            self.task_stated = True
        if kind in LIST_KINDS:
            for item in list_items(parts[0], kind):
                self.out.add(kind, item)
        else:
            self.out.add(kind, parts[0])
        for sentence in parts[1:]:
            if _LABEL_RE.match(sentence) or kind in LIST_KINDS:
                self.prose(sentence)
            elif classify(sentence, first_task=False) is None:
                items = self.out.items.get(kind)
                if items and kind != "decision":
                    items[-1] = f"{items[-1]} {clean_sentence(sentence)}"
                elif items:
                    self.out.reasons[items[-1]] = " ".join(
                        p for p in (self.out.reasons.get(items[-1], ""), clean_sentence(sentence)) if p
                    )
            else:
                self.prose(sentence)

    def checkbox(self, mark: str, text: str) -> None:
        self.out.add("done" if mark.strip() else "next", text)

    def prose(self, line: str) -> None:
        for sentence in sentences(line):
            labelled = _LABEL_RE.match(sentence)
            if labelled:
                self.labelled(LABELS[labelled.group(1).lower()], labelled.group(2))
                continue
            steps = sequence(sentence)
            if steps is not None:
                for step in steps:
                    self.out.add("next", step)
                continue
            for clause in clauses(sentence):
                inline = _LABEL_RE.match(clause)
                if inline:
                    self.labelled(LABELS[inline.group(1).lower()], inline.group(2))
                    continue
                kind = classify(clause, first_task=not self.task_stated)
                if kind == "task":
                    if self.task_stated:
                        continue  # more ongoing work in the same note: the journal keeps it
                    self.task_stated = True
                if kind is not None:
                    self.out.add(kind, clause)

    def line(self, raw: str) -> None:
        line = raw.strip()
        if not line:
            return
        heading = _HEADING_RE.match(line)
        if heading:
            self.section, self.section_lines = LABELS[heading.group(1).lower()], 0
            return
        labelled = _LABEL_RE.match(line)
        if labelled:
            self.section = None
            self.labelled(LABELS[labelled.group(1).lower()], labelled.group(2))
            return
        box = _CHECKBOX_RE.match(line)
        if box and self.section in (None, "task", "next", "done", "progress"):
            self.checkbox(box.group(1), line[box.end() :])
            return
        section = self.section
        if section is not None and (_BULLET_RE.match(raw) or section in _LINE_SECTIONS):
            self.section_lines += 1
            if section == "task" and self.section_lines > 1:
                self.prose(line)  # one task; the lines after it are read as prose
            elif section == "files" or section in LIST_KINDS:
                if section == "task":
                    self.task_stated = True
                for item in [line] if _BULLET_RE.match(raw) else list_items(line, section):
                    self.out.add(section, item)
            else:
                if section == "task":
                    self.task_stated = True
                self.out.add(section, line)
            return
        self.section = None
        if _BULLET_RE.match(raw):
            self.prose(_BULLET_RE.sub("", raw))
        else:
            self.prose(line)


def extract(text: str, project_root: Path) -> Extracted:
    reader = _Reader()
    for raw_line in text.splitlines():
        reader.line(raw_line)
    reader.out.files = find_files(text, project_root)
    return reader.out


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
    """The facts a free-text checkpoint states (labelled lines and classified prose), with the
    text itself, as written, for the journal.

    Files named in passing count only when they exist (prose cannot tell a path from a word);
    files listed under an explicit label are kept when missing too, if they lie inside the
    project, so the merger can say they are not on disk instead of dropping them silently."""
    found = extract(text, project_root)
    listed = project_files(
        [t for chunk in found.of("files") for t in chunk.replace(";", ",").split(",")], project_root
    )
    progress = found.of("progress")
    return ContextFacts(
        source="text",
        text=text.strip(),
        requests=found.of("task")[:1],
        in_progress=progress[-1] if progress else "",
        files_mentioned=list(dict.fromkeys([*listed, *found.files])),
        failures=[Failure(check=b, stated=True, tried=found.tried.get(b, [])) for b in found.of("blocker")],
        decisions=[DecisionFact(decision=d, reason=found.reasons.get(d, "")) for d in found.of("decision")],
        questions=[QuestionFact(text=q) for q in found.of("question")],
        completions=found.of("done"),
        next_steps=found.of("next"),
        overview=found.of("overview"),
        architecture=found.of("architecture"),
        notes=found.of("note"),
        gotchas=[Gotcha(text=g) for g in found.of("gotcha")],
    )


def project_files(paths: list[str], project_root: Path) -> list[str]:
    """``paths`` as project-relative POSIX paths: existing files, and places inside the project
    that do not exist (yet); paths outside the project are left out."""
    root = project_root.resolve()
    out: list[str] = []
    for token in paths:
        token = token.strip().strip("`'\"")
        if not token:
            continue
        rel = relative_file(token, root) or _inside(token, root)
        if rel is not None and rel not in out:
            out.append(rel)
    return out


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
