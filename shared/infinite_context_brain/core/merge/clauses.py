"""What one clause of a free-text checkpoint says: a task, a step done, a next step, a decision,
a blocker, a gotcha, a question, or nothing a field holds (the journal keeps it anyway).

People and models write checkpoints as labelled lines and as prose. Prose is cut into clauses
(sentences, then at ``;``, ``, but`` and ``, now`` / ``, then``) and each clause is read by its cue
words: tense and the first verb carry most of it ("Fixed X" is done, "Fixing X" is the work in
progress, "Fix X" is a request, "X still fails" a blocker). Everything here is pure and
deterministic; ``extract.py`` puts the clauses into facts.
"""

from __future__ import annotations

import re
from typing import Literal

Kind = Literal[
    "task",
    "progress",
    "next",
    "done",
    "decision",
    "blocker",
    "tried",
    "question",
    "note",
    "gotcha",
    "files",
    "overview",
    "architecture",
]

#: labels people write before a colon or as a heading, and the kind of what follows
LABELS: dict[str, Kind] = {
    **dict.fromkeys(
        [
            "current task",
            "task",
            "goal",
            "user request",
            "request",
            "working on",
            "now",
            "focus",
            "objective",
            "status",
            "current focus",
            "current work",
        ],
        "task",
    ),
    **dict.fromkeys(["in progress", "subtask", "current step", "doing", "wip"], "progress"),
    **dict.fromkeys(
        [
            "next",
            "next step",
            "next steps",
            "next up",
            "up next",
            "remaining",
            "remaining work",
            "left",
            "left to do",
            "still to do",
            "todo",
            "todos",
            "to do",
            "to-do",
            "plan",
            "pending",
            "follow-up",
            "follow-ups",
            "follow up",
            "action items",
            "then",
            "steps",
        ],
        "next",
    ),
    **dict.fromkeys(
        [
            "done",
            "completed",
            "changes",
            "changed",
            "finished",
            "fixed",
            "shipped",
            "progress",
            "accomplished",
        ],
        "done",
    ),
    **dict.fromkeys(
        ["decision", "decisions", "decided", "approach", "chose", "choice", "rationale"], "decision"
    ),
    **dict.fromkeys(
        [
            "blocker",
            "blockers",
            "blocked",
            "blocked by",
            "failing",
            "bug",
            "bugs",
            "known issue",
            "known issues",
            "problem",
            "problems",
            "broken",
        ],
        "blocker",
    ),
    **dict.fromkeys(["tried", "attempted", "attempts", "tried so far"], "tried"),
    **dict.fromkeys(
        ["question", "questions", "open question", "open questions", "unknowns", "undecided"], "question"
    ),
    **dict.fromkeys(
        [
            "note",
            "notes",
            "important",
            "warning",
            "caution",
            "caveat",
            "fyi",
            "context",
            "summary",
            "reminder",
            "remember",
            "nb",
        ],
        "note",
    ),
    **dict.fromkeys(
        [
            "gotcha",
            "gotchas",
            "learned",
            "lesson",
            "lessons",
            "lesson learned",
            "lessons learned",
            "pitfall",
            "pitfalls",
            "tip",
            "root cause",
            "til",
        ],
        "gotcha",
    ),
    **dict.fromkeys(["files", "files touched", "files edited", "active files", "key files"], "files"),
    **dict.fromkeys(["overview", "project", "about"], "overview"),
    **dict.fromkeys(["architecture", "design", "stack"], "architecture"),
}
#: kinds whose label body is a list (``Next: a; b``, ``Plan: 1) a 2) b``)
LIST_KINDS: frozenset[Kind] = frozenset({"next", "done", "blocker", "tried", "question", "files"})


_QUESTION_START = re.compile(
    r"^(?:should (?:we|i)|do we|shall we|which|whether|how (?:do|should|can) we|who|open question|"
    r"undecided|tbd|to decide|need to decide|not sure (?:whether|if|which))\b",
    re.I,
)
_DECISION = re.compile(
    r"\b(?:decided|decision|going with|go with|we'?ll use|we will use|will use|chose|chosen|opted (?:for|to)|"
    r"settled on|agreed|instead of|rather than|in favou?r of|because|so that)\b",
    re.I,
)
_USING = re.compile(r"^(?:using|use|we use|we'?re using)\s+\S", re.I)
_BLOCKER = re.compile(
    r"\b(?:still (?:fails?|failing|broken|crash\w*|errors?|red)|fails?|failing|is broken|are broken|"
    r"doesn'?t work|does not work|don'?t work|crash(?:es)?|errors? out|is red|blocked|can'?t|cannot|"
    r"won'?t (?:start|build|compile|run))\b",
    re.I,
)
_GOTCHA_START = re.compile(
    r"^(?:root cause|the cause|cause|it was|it turns out|turns out|the trick(?: is)?|the problem was|"
    r"the issue was|caused by|the fix was|beware|watch out|careful)\b",
    re.I,
)
_NEXT_START = re.compile(
    r"^(?:next|then|and then|after that|afterwards|todo|to do|later|need to|needs to|still need to|"
    r"i still need to|we still need to|i need to|we need to|have to|must|should|will|plan to|"
    r"planning to|want to|first)\b",
    re.I,
)
_NEXT_END = re.compile(r"\b(?:next|later|afterwards|after that)\W*$", re.I)
_DONE_WORDS = (
    "fixed implemented completed finished resolved merged shipped landed added wrote created removed "
    "deleted refactored renamed migrated ported cleaned updated moved replaced converted wired "
    "installed configured deployed released built extracted split simplified optimized optimised "
    "registered enabled disabled upgraded bumped documented tested verified reviewed closed solved"
).split()
_DONE_START = re.compile(r"^(?:(?:i|we|i've|we've|have|has)\s+)?(?:" + "|".join(_DONE_WORDS) + r")\b", re.I)
_DONE_ANYWHERE = re.compile(
    r"\b(?:is|are|was|were|now) (?:done|fixed|finished|complete|completed|merged|working|green)\b|"
    r"\b(?:done|fixed|works(?: now)?|passes(?: now)?|passing now|all tests pass(?:ing)?)\W*$",
    re.I,
)
_GERUND_START = re.compile(
    r"^(?:(?:i'?m|i am|we'?re|we are|currently|now|still|busy|right now)\s+)*(?:working on\s+)?"
    r"[a-z]{3,}ing\b",
    re.I,
)
_WORKING_ON = re.compile(r"^(?:(?:i'?m|i am|we'?re|we are|currently|now)\s+)*working on\b", re.I)
_IMPERATIVE = re.compile(
    r"^(?:please\s+)?(?:add|fix|make|build|write|implement|create|refactor|investigate|debug|remove|"
    r"delete|update|migrate|port|rename|move|replace|support|allow|ensure|improve|speed up|"
    r"optimi[sz]e|clean up|set up|upgrade|convert|split|extract|document|test|deploy|release|"
    r"handle|change|rewrite|design|choose|review|paginate|get|find|check)\b",
    re.I,
)
#: words that say only that work goes on ("wip", "still going", "continue"): never the task
_STEERING = frozenset(
    (
        "wip continue continuing going still more same progress working work stuff things it on "
        "with the a an and of this that now again ok okay yes done later tbd todo update updates"
    ).split()
)
_WORD = re.compile(r"[A-Za-z0-9_./-]+")


#: verbs and pronouns of a short reply that points at work already named ("fix it up", "tackle them")
_POINTING = frozenset(
    "fix do finish try run check handle tackle implement start make go keep carry proceed continue "
    "up please it them that this those these implementation task one".split()
)


def content_free(text: str) -> bool:
    """Says only that work goes on or points at work named before ("wip", "still going",
    "continue implementation", "fix it up"): never the task."""
    words = [w.lower() for w in _WORD.findall(text)]
    if len(words) < 2:
        return True
    if all(w in _STEERING for w in words):
        return True
    return len(words) <= 5 and all(w in _STEERING or w in _POINTING for w in words)


_CLAUSE_SPLIT = re.compile(
    r"\s*;\s+|,\s+(?=(?:but|now|then|and then|next|still|so|using|which means)\b)"
    r"|\s+(?=but\s+\S+\s+(?:still|fails?)\b)",
    re.I,
)
_LEAD_WORDS = re.compile(r"^(?:but|and|so|and then)\s+", re.I)


def clauses(sentence: str) -> list[str]:
    """A sentence cut where it changes subject: at ``;``, ``, but``, ``, now``, ``, then``."""
    parts = [p.strip(" ,.") for p in _CLAUSE_SPLIT.split(sentence)]
    return [p for p in (_LEAD_WORDS.sub("", p) for p in parts) if len(p) >= 2]


def classify(clause: str, *, first_task: bool) -> Kind | None:
    """The kind of one prose clause (None: a statement no field holds; the journal keeps it).
    ``first_task``: no task was stated yet in this checkpoint (a request can become it)."""
    text = clause.strip()
    if text.endswith("?") or _QUESTION_START.search(text):
        return "question"
    if _GOTCHA_START.search(text):
        return "gotcha"
    done = bool(_DONE_START.search(text) or _DONE_ANYWHERE.search(text))
    if _BLOCKER.search(text) and not done:
        return "blocker"
    if _NEXT_START.search(text) or _NEXT_END.search(text):
        return "next"
    if done:
        return "done"
    if _DECISION.search(text) or _USING.search(text):
        return "decision"
    if content_free(text):
        return None
    if _WORKING_ON.search(text) or _GERUND_START.search(text):
        return "task"
    if _IMPERATIVE.search(text):
        return "task" if first_task else "next"
    return None


_REASON = re.compile(r",?\s+(?:because|since|as|so that|given that)\s+", re.I)


def decision_and_reason(text: str) -> tuple[str, str]:
    """("Use authlib rather than hand-rolled OAuth", "it handles state and PKCE")."""
    found = _REASON.search(text)
    if found is None or found.start() < 3:
        return text, ""
    return text[: found.start()].strip(" ,."), text[found.end() :].strip(" ,.")


_INLINE_NUMBERS = re.compile(r"(?:^|\s)(?:\d{1,2}[.)]|\(\d{1,2}\))\s+")
_FIRST = re.compile(r"^(?:first|start with|begin with)\s+", re.I)
_THEN_SPLIT = re.compile(r",?\s+(?:and then|then|and)\s+|,\s+", re.I)


def list_items(body: str, kind: Kind) -> list[str]:
    """The items of a list written on one line: ``a; b``, ``1) a 2) b``, for attempts also
    ``a, b``."""
    if len(_INLINE_NUMBERS.findall(body)) >= 2:
        parts = _INLINE_NUMBERS.split(body)
    else:
        parts = re.split(r"\s*;\s*", body)
    if kind == "tried":
        parts = [q for p in parts for q in re.split(r",\s+", p)]
    return [p.strip(" ,.") for p in parts if p.strip(" ,.")]


def sequence(text: str) -> list[str] | None:
    """The steps of "First the subnets, then the NAT gateway, then the security groups" (None
    when the sentence is not a sequence)."""
    if not re.search(r"\bthen\b", text, re.I) or not _FIRST.match(text):
        return None
    steps = [_FIRST.sub("", p) for p in _THEN_SPLIT.split(text)]
    return [s.strip(" ,.") for s in steps if s.strip(" ,.")]
