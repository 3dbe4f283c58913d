"""Reading a free-text checkpoint into facts the offline merger can place.

People (and models) write checkpoints in two styles: labelled (``Current task: ...``, a
``## Decisions`` heading followed by bullets, ``- [ ]`` checklists) and plain prose (``Fixed the
login bug in auth.py. We'll use Redis for the cache. Next: rate limiting.``). Labels win; prose
is cut into clauses and each is read by its cue words (``clauses.py``). The text itself is kept
as written beside the facts (``ContextFacts.text``, the journal), so a clause no rule reads is
still there. Everything here is pure and deterministic.
"""

from __future__ import annotations

import difflib
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from ..facts import ContextFacts, DecisionFact, Failure, Gotcha, QuestionFact
from .clauses import (
    LABELS,
    LIST_KINDS,
    PROSE_LABELS,
    TICKET_ID,
    Kind,
    classify,
    decision_and_reason,
    finishes_task,
    list_items,
    read_clauses,
    sequence,
    starts_now,
    unnamed_fix,
    work_of,
)

_ALL_LABELS = {**LABELS, **PROSE_LABELS}
_LABEL_NAMES = "|".join(sorted(map(re.escape, _ALL_LABELS), key=len, reverse=True))
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
# A sentence opened by a few words and a colon ("New task from the user: ...", "Answer to the
# open question: ..."): the first label among those words says what the rest is.
_LEAD_IN_RE = re.compile(r"^(?P<lead>[^:\n]{2,60}?):\s+(?P<body>\S.*)$", re.S)
#: labels too common as plain words to name a lead-in's kind ("about the cache: ...")
_WEAK_LABELS = frozenset(
    "about project stack design now then left plan context status steps q qs nb changes changed doing "
    "focus request remember summary update current open".split()
)
_LEAD_LABEL_RE = re.compile(
    r"\b("
    + "|".join(sorted((re.escape(k) for k in _ALL_LABELS if k not in _WEAK_LABELS), key=len, reverse=True))
    + r")\b",
    re.I,
)
MAX_LEAD_IN_WORDS = 6
#: kinds kept as written prose, full stop included
_PROSE_KINDS: frozenset[Kind] = frozenset({"overview", "architecture", "note", "gotcha"})

# Work that begins with a part of something named just before ("Starting with a mark-and-sweep").
_FIRST_PART = re.compile(r"^(?:(?:i'?m|we'?re|i am|we are)\s+)?(?:starting|beginning) with\b", re.I)

# A word and a colon opening a line: a label typed with a slip ("taks:", "blokcer:") is still one.
_WORD_COLON_RE = re.compile(r"^\s*([A-Za-z][A-Za-z-]{3,15})\s*:\s+(\S.*)$")
_FUZZY_CUTOFF = 0.75
_SINGLE_WORD_LABELS = sorted(k for k in _ALL_LABELS if " " not in k and len(k) >= 4)


def typo_label(line: str) -> tuple[str, str] | None:
    """(label, body) when ``line`` opens with a misspelt label ("progres: DMA stream 5 configured")."""
    found = _WORD_COLON_RE.match(line)
    if found is None:
        return None
    close = difflib.get_close_matches(found.group(1).lower(), _SINGLE_WORD_LABELS, n=1, cutoff=_FUZZY_CUTOFF)
    return (close[0], found.group(2)) if close else None


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
    #: the text says the work as a whole is finished ("closing this out")
    task_finished: bool = False
    #: the text says something was fixed without naming it ("fixed.", "fix shipped")
    unnamed_fix: bool = False
    #: the kind of the item added last
    last: Kind | None = None

    def add(self, kind: Kind, text: str) -> None:
        text = clean_sentence(text)
        if kind not in _PROSE_KINDS and not text.endswith(".."):
            text = text.rstrip(".")  # one item, however it was punctuated
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
        if kind == "done":
            self.task_finished = self.task_finished or finishes_task(text)
            self.unnamed_fix = self.unnamed_fix or unnamed_fix(text)
        if kind == "switch":  # new work replaces any task named before it in this text
            steps = self.items.get("next", [])
            if self.last in {"next", "task"} and _FIRST_PART.match(text):
                # "Next up: dead code elimination. Starting with a mark-and-sweep": the work named
                # just before is the work now, and this its first part
                if self.last == "next" and steps:
                    self.items["task"] = [steps.pop()]
                self.items.setdefault("progress", []).append(work_of(text))
            else:
                self.items["task"] = [work_of(text)]
            self.last = "task"
            return
        if kind in {"task", "ongoing"}:
            text = work_of(text)
        self.items.setdefault(kind, []).append(text)
        self.last = kind

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
        #: under a prose heading (``## Progress``, ``## Status``): the kind of a clause no rule reads
        self.prose_section: tuple[Kind | None] | None = None
        #: nothing was read yet: the text opens here
        self.opening = True

    def label(self, name: str, body: str) -> None:
        if name in PROSE_LABELS:
            self.prose(body, default=PROSE_LABELS[name])
        else:
            self.labelled(LABELS[name], body)

    def labelled(self, kind: Kind, body: str) -> None:
        """A label's body: its first sentence is of the label's kind; the sentences after it are
        read on their own ("Done: login. Next: logout."), or continue a whole-text kind."""
        parts = sentences(body) if kind not in {"overview", "architecture"} else [body]
        if not parts:
            return
        self.opening = False
        if kind == "next" and starts_now(parts[0]):
            kind = "switch"  # "Next crash on the list: X, looking into it now": X is the work now
        if kind in {"task", "switch"}:
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

    def lead_in(self, sentence: str) -> bool:
        """Reads "<a few words>: <body>" whose words hold a label; False when they hold none."""
        found = _LEAD_IN_RE.match(sentence)
        if found is None or len(found.group("lead").split()) > MAX_LEAD_IN_WORDS:
            return False
        name = _LEAD_LABEL_RE.search(found.group("lead"))
        if name is None:
            return False
        label = name.group(1).lower()
        if LABELS.get(label) == "done" and found.group("lead").lower() != label:
            self.labelled("done", sentence)  # "Fixed ranking: we were ..." says what was fixed
            return True
        body = found.group("body")
        ids = [i for i in TICKET_ID.findall(found.group("lead")) if i not in body]
        self.label(label, f"{' '.join(ids)}: {body}" if ids else body)  # "[PAY-1450] new ticket: X"
        return True

    def prose(self, line: str, default: Kind | None = None) -> None:
        """Sentences, then clauses, each read by its cue words; ``default`` is the kind of a
        clause no rule reads (the body of a ``Progress:`` label is progress)."""
        for sentence in sentences(line):
            labelled = _LABEL_RE.match(sentence)
            if labelled:
                self.label(labelled.group(1).lower(), labelled.group(2))
                continue
            if self.lead_in(sentence):
                continue
            steps = sequence(sentence)
            if steps is not None:
                for step in steps:
                    self.out.add("next", step)
                continue
            for clause, hint in read_clauses(sentence):
                inline = _LABEL_RE.match(clause)
                if inline:
                    self.label(inline.group(1).lower(), inline.group(2))
                    continue
                # a request opens the text ("Add a progress bar"); one met later is a step
                kind = classify(clause, first_task=self.opening and not self.task_stated) or hint or default
                self.opening = False
                if kind == "ongoing" and default == "progress":
                    kind = "progress"  # work going on, under a label that says it is the step
                if kind == "ongoing" and clause != sentence and _points_back(clause):
                    clause = sentence  # "CI takes 42 min, I'm on cutting it down": the sentence names it
                if kind == "task":
                    if self.task_stated:
                        continue  # more work named in the same note: the journal keeps it
                    self.task_stated = True
                if kind == "switch":
                    self.task_stated = True
                if kind is not None:
                    self.out.add(kind, clause)

    def line(self, raw: str) -> None:
        line = raw.strip()
        if not line:
            return
        heading = _HEADING_RE.match(line)
        if heading:
            name = heading.group(1).lower()
            if name in PROSE_LABELS:
                self.section, self.prose_section = None, (PROSE_LABELS[name],)
            else:
                self.section, self.section_lines, self.prose_section = LABELS[name], 0, None
            return
        labelled = _LABEL_RE.match(line)
        typo = None if labelled else typo_label(line)
        if labelled or typo:
            self.section = self.prose_section = None
            name, body = (labelled.group(1).lower(), labelled.group(2)) if labelled else typo  # type: ignore[misc]
            self.label(name, body)
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
        default = self.prose_section[0] if self.prose_section else None
        if _BULLET_RE.match(raw):
            self.prose(_BULLET_RE.sub("", raw), default)
        else:
            self.prose(line, default)


# "auth cont.", "MV3 migration, continued": the same work as before, not a new task
_CONTINUED = re.compile(r"(?:\bcont(?:'?d|inued)?\.?|\bctd\.?|\(cont(?:'?d|inued)?\.?\))\s*$", re.I)
# Emacs org-mode: "* Title", "** TODO item", "** DONE item"
_ORG_ITEM = re.compile(r"^\s*\*{2,}\s+\S")
_ORG_KEYWORD = re.compile(
    r"^\s*\*+\s+(TODO|DONE|NEXT|WAITING|BLOCKED|DECIDED|DECISION|QUESTION|NOTE|DOING|WIP|IN-PROGRESS)\b:?\s*(.*)$"
)
_ORG_LABELS = {
    "waiting": "blocked",
    "doing": "in progress",
    "wip": "in progress",
    "in-progress": "in progress",
}
_ORG_TITLE = re.compile(r"^\s*\*\s+(.+?)\s*$")
_SET_ASIDE = re.compile(r"\s*\[(?:parked|on hold|paused|done|closed|shelved)\]\s*$", re.I)


def _from_org(lines: list[str]) -> list[str]:
    """Org-mode lines as the labelled lines they mean: "** TODO x" is "Next: x", a top-level
    "* Title" names the work (a later one, the new work; one tagged [PARKED], set-aside work),
    "* NOTES" is a heading."""
    out: list[str] = []
    titled = False
    for line in lines:
        keyword = _ORG_KEYWORD.match(line)
        if keyword:
            name = keyword.group(1).lower()
            out.append(f"{_ORG_LABELS.get(name, name)}: {keyword.group(2)}")
            continue
        title = _ORG_TITLE.match(line)
        if title is None or line.lstrip().startswith("**"):
            out.append(re.sub(r"^\s*\*+\s+", "- ", line))
            continue
        text = title.group(1)
        if _HEADING_RE.match(text):
            out.append(f"## {text}")
        elif _SET_ASIDE.search(text):
            out.append(f"Note: {text}")
            titled = True  # the work set aside was the task; the next title replaces it

        elif not _CONTINUED.search(text):
            out.append(f"{'New task' if titled else 'Task'}: {text}")
            titled = True
    return out


_POINTS_BACK = re.compile(r"\b(?:it|this|that|them|these|those)\b", re.I)
MAX_POINTING_WORDS = 8


def _points_back(clause: str) -> bool:
    """A short clause whose work is a pronoun ("I'm on cutting it down")."""
    return len(clause.split()) <= MAX_POINTING_WORDS and _POINTS_BACK.search(clause) is not None


def _list_title(lines: list[str]) -> str | None:
    """The first line when it names what the list under it is for ("Accessibility pass on the
    settings pages" over a checklist): not a label, a heading, a list item or a sentence any
    rule reads."""
    filled = [line for line in lines if line.strip()]
    if len(filled) < 2:
        return None
    first, second = filled[0].strip(), filled[1]
    if not (_BULLET_RE.match(second) or _CHECKBOX_RE.match(second)):
        return None
    if first.startswith("#") or first.endswith(":") or _BULLET_RE.match(first) or _CHECKBOX_RE.match(first):
        return None
    if _LABEL_RE.match(first) or _HEADING_RE.match(first) or _CONTINUED.search(first):
        return None
    lead_in = _LEAD_IN_RE.match(first)
    if lead_in and _LEAD_LABEL_RE.search(lead_in.group("lead")):
        return None  # "Next: ..." over a list; "auth: SPA -> PKCE" over one is a title
    if len(first.split()) < 2 or classify(first, first_task=True) not in (None, "task", "ongoing", "switch"):
        return None
    return first


def extract(text: str, project_root: Path) -> Extracted:
    reader = _Reader()
    lines = text.splitlines()
    if any(_ORG_ITEM.match(line) for line in lines):
        lines = _from_org(lines)

    title = _list_title(lines)
    for raw_line in lines:
        if title is not None and raw_line.strip() == title:
            reader.labelled("task", title)
            title = None
            continue
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
        ongoing=found.of("ongoing")[:1],
        task_finished=found.task_finished,
        unnamed_fix=found.unnamed_fix,
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
