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
    "ongoing",
    "switch",
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
            "focus",
            "objective",
            "current focus",
            "current work",
            "ticket",
            "story",
            "epic",
            "aim",
        ],
        "task",
    ),
    **dict.fromkeys(
        [
            "new task",
            "new ticket",
            "new request",
            "switching to",
            "moving on to",
            "starting on",
            "on to the next thing",
            "next task",
            "pivot",
        ],
        "switch",
    ),
    **dict.fromkeys(["now", "now working on", "currently", "current"], "ongoing"),
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
            "accomplished",
        ],
        "done",
    ),
    **dict.fromkeys(
        [
            "decision",
            "decisions",
            "decided",
            "approach",
            "chose",
            "choice",
            "rationale",
            "answer",
            "answered",
            "settled",
            "changed my mind",
            "change of plan",
            "conclusion",
            "verdict",
        ],
        "decision",
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
            "issue",
            "issues",
            "remaining issue",
            "remaining issues",
            "open issue",
            "open issues",
            "stuck",
            "stuck on",
            "error",
            "errors",
            "regression",
        ],
        "blocker",
    ),
    **dict.fromkeys(["tried", "attempted", "attempts", "tried so far"], "tried"),
    **dict.fromkeys(
        [
            "question",
            "questions",
            "open question",
            "open questions",
            "unknowns",
            "undecided",
            "q",
            "open q",
            "qs",
            "open",
        ],
        "question",
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
#: labels whose body is read as prose, clause by clause (a status update says many kinds of
#: things); a clause no rule reads is of the kind given here (None: the journal keeps it)
PROSE_LABELS: dict[str, Kind | None] = {
    **dict.fromkeys(["progress", "progress update"], "progress"),
    **dict.fromkeys(
        [
            "status",
            "status update",
            "update",
            "summary",
            "recap",
            "tl;dr",
            "tldr",
            "eod",
            "handoff",
            "hand-off",
            "session summary",
            "where we are",
            "where things stand",
        ],
        None,
    ),
}
#: kinds whose label body is a list (``Next: a; b``, ``Plan: 1) a 2) b``)

LIST_KINDS: frozenset[Kind] = frozenset({"next", "done", "blocker", "tried", "question", "files"})


_QUESTION_START = re.compile(
    r"^(?:should (?:we|i)|do we|shall we|which|whether|how (?:do|should|can) we|who|open question|"
    r"undecided|tbd|to decide|need to decide|not sure (?:whether|if|which))\b",
    re.I,
)
# Doubt said anywhere in the clause ("Still unsure whether we keep the versioned docs").
_QUESTION_ANYWHERE = re.compile(
    r"\b(?:unsure|not sure|wondering|undecided|need to ask|to be decided|open question|no idea)"
    r"(?: (?:whether|if|which|how|about|what))?\b",
    re.I,
)
_DECISION = re.compile(
    r"\b(?:decided|decision|going with|go with|went with|we'?ll use|we will use|will use|chose|chosen|"
    r"opted (?:for|to)|settled on|agreed|instead of|rather than|in favou?r of|because|so that)\b",
    re.I,
)
# A choice stated first: read before a next step ("We'll use Redis" is no step to do).
_DECISION_START = re.compile(
    r"^(?:(?:so|ok|okay)\s+)?(?:(?:i|we) (?:decided|chose|opted|settled)|decided|going with|went with|"
    r"we'?ll (?:use|go with|keep|stick with)|we will (?:use|go with|keep|stick with)|sticking with|"
    r"settled on|chose|opted)\b",
    re.I,
)
_USING = re.compile(r"^(?:using|use|we use|we'?re using)\s+\S", re.I)
_BLOCKER = re.compile(
    r"\b(?:still (?:fails?|failing|broken|crash\w*|errors?|red|times? out)|fails?|failing|is broken|"
    r"are broken|doesn'?t work|does not work|don'?t work|crash(?:es)?(?!-)|errors? out|is red|blocked|"
    r"can'?t|cannot|won'?t (?:start|build|compile|run)|stuck|tim(?:es|ed|ing) out|rejects?|rejected|"
    r"not acceptable|(?:is|are) off|hangs?|leaks?|segfaults?|nan|lost|regress(?:ed|ion)|"
    r"(?:returns?|returning|gives?|giving|throws?|throwing|raises?|raising) (?:an? )?(?:bare )?"
    r"(?:[45]\d\d|error|exception|nan|null|none)|no \w+ (?:arrive|arrives|show up|shows up|appear))\b",
    re.I,
)
# An exception or error type named in the clause (``IllegalStateException``, ``KeyError``).
_ERROR_NAME = re.compile(r"\b[A-Z]\w*(?:Exception|Error)\b")
# "still 503", "still NaN at 3e-4": a short clause saying a symptom stays.
_STILL_SYMPTOM = re.compile(
    r"^still\s+(?!on\b|going\b|working\b|need\w*\b|have\b|to\b|todo\b|in progress\b|wip\b|open\b)\S+"
    r"(?:\s+\S+){0,4}$",
    re.I,
)
_GOTCHA_START = re.compile(
    r"^(?:root cause|the cause|cause|it was|it turns out|turns out|the trick(?: is)?|the problem was|"
    r"the issue was|caused by|the fix was|beware|watch out|careful)\b|"
    r"^(?:\S+\s+){1,4}(?:traced (?:back )?to|came from|comes from|was caused by|is caused by)\b",
    re.I,
)

_NEXT_START = re.compile(
    r"^(?:next|then|and then|after that|afterwards|todo|to do|later|need to|needs to|still need to|"
    r"i still need to|we still need to|i need to|we need to|have to|must|should|will|plan to|"
    r"planning to|want to|first|going to|gonna|i'?ll|we'?ll|let'?s|"
    r"(?:i'?m|we'?re|i am|we are) (?:going|planning) to|"
    r"(?:i |we )?(?:haven'?t|havent|have not|didn'?t|did not) (?:yet )?(?:done|started|sorted|finished|"
    r"got to|gotten to|touched|looked at|tackled|wired|written|added)|not yet|yet to)\b",
    re.I,
)
# A step still to take, said first: it wins over the failure it mentions.
_NEXT_FIRM = re.compile(
    r"^(?:(?:i |we )?(?:still )?(?:need|needs|have|has) to|must|plan to|planning to|want to|going to|gonna|"
    r"i'?ll|we'?ll|todo|to do|next\b|(?:i'?m|we'?re|i am|we are) (?:going|planning) to)\b",
    re.I,
)
_NEXT_END = re.compile(r"\b(?:next|later|afterwards|after that|yet|tomorrow)\W*$", re.I)
_DONE_WORDS = (
    "fixed implemented completed finished resolved merged shipped landed added wrote created removed "
    "deleted refactored renamed migrated ported cleaned updated moved replaced converted wired "
    "installed configured deployed released built extracted split simplified optimized optimised "
    "registered enabled disabled upgraded bumped documented tested verified reviewed closed solved "
    "made ran got put sent took did found kept brought caught rewrote swapped dropped talked"
).split()
#: -ed words that are no completion at the start or end of a clause
_NOT_DONE = frozenset(
    (
        "need needed based used red bed shed embed proceed exceed feed seed speed weed breed bleed "
        "indeed supposed expected required interested related blocked failed stuck deprecated "
        "unsupported unexpected detailed advanced limited named called allowed scheduled planned "
        "intended seemed wanted hoped tried asked noticed realised realized discovered paused parked "
        "shelved deprioritized deprioritised postponed continued"
    ).split()
)
_DONE_START = re.compile(
    r"^(?:(?:i|we|i've|we've|i have|we have|have|has|just|also|finally|already|now)\s+)*"
    r"(?:" + "|".join(_DONE_WORDS) + r"|(?P<past>[a-z]{3,}ed))\b",
    re.I,
)
_DONE_ANYWHERE = re.compile(
    r"\b(?:is|are|was|were|now|all) (?:done|fixed|finished|complete|completed|merged|working(?! on\b)|"
    r"green|live|resolved|sorted)\b|\b(?:is|are) (?:all )?in(?:\W*$|\s+(?:for|place)\b)|[✅✓✔]|"
    r"^\S+(?:\s+\S+){0,3}\s+(?:is |was |got |has been )?(?:shipped|merged|deployed|landed|released|"
    r"rolled out|pushed)\b|"
    r"\b(?:done|fixed|passes(?: now)?|passing now|all tests pass(?:ing)?|green(?: now| again)?)\W*$",
    re.I,
)
# "sensor passes now", "TestFlight pushes work", "The codemod worked": a thing that works now.
_WORKS_END = re.compile(
    r"(?P<before>\S+)\s+(?:works?|worked|pass(?:es|ed)?|renders?|rendered|succeed(?:s|ed)?|builds? "
    r"clean|is green|are green)(?:\s+(?:now|again|fine|locally|end to end|too|as well))?\W*$",
    re.I,
)
_WORKS_NOT_AFTER = frozenset(
    "more the some of to a no for on in with first next any much lot needs need".split()
)
# A short clause ending in a past participle: "networking stack moved", "all 181 days backfilled".
_PARTICIPLE_END = re.compile(
    r"^(?:\S+\s+){1,7}(?P<word>[a-z]{3,}ed|done|built|written|rebuilt)(?:\s+(?:now|too|again))?\W*$", re.I
)
_NEGATION = re.compile(r"\b(?:not|n't|never|no longer)\b|n't\b", re.I)
# Partial progress: "23 of 80 so far", "mid-way through the data stack", "a manual VACUUM is running".
_PROGRESS = re.compile(
    r"\b(?:mid-?way|half-?way|half done|part-?way|so far|in progress|under ?way|"
    r"(?:is|are) (?:still )?running(?: now)?|running now)\b",
    re.I,
)
# "23 of 80 catalogued", "41/80 done": part of a count (not "20/20 green", not a date "3/12")
_COUNT = re.compile(r"\b(\d+)\s*(?:/|of|out of)\s*(\d+)\s+[a-z]", re.I)
# A conventional commit subject ("feat(uart): TX via DMA"): a change made ("wip(...)": in progress)
_COMMIT_SUBJECT = re.compile(
    r"^(?:(?P<wip>wip)|feat|fix|chore|refactor|docs|test|tests|perf|build|ci|style|revert)(?:\([^)]*\))?!?:\s+\S",
    re.I,
)


def _partial(text: str) -> bool:
    return _PROGRESS.search(text) is not None or any(int(a) < int(b) for a, b in _COUNT.findall(text))


_GERUND_START = re.compile(
    r"^(?:(?:i'?m|i am|we'?re|we are|i'?ve been|we'?ve been|been|currently|now|still|busy|right now|"
    r"meanwhile)"
    r"\s+)*(?:working on\s+)?"
    r"(?P<verb>[a-z]{3,}ing)\b(?:\s+(?P<after>\S+))?",
    re.I,
)
#: words after an -ing word that make it a verb taking an object ("Setting up", "Building the parser")
_OBJECT_START = frozenset(
    "the a an this that these those our my all some up out off in through for with".split()
)
#: verbs after an -ing word that make it the subject ("Folding works", "Caching is slow")
_SUBJECT_VERBS = frozenset(
    "is are was were has have had works worked fails failed passes passed takes took needs looks seems "
    "runs ran breaks broke still now done helps".split()
)
#: -ing words that name things, not work going on ("networking stack moved", "the string is empty")
_ING_NOUNS = frozenset(
    (
        "thing things nothing something anything everything string strings morning evening during "
        "spring ring king wing ceiling meeting wedding padding setting settings networking building "
        "logging caching routing pricing billing testing tooling timing heading housing thinking "
        "warning warnings listing listings mapping mappings binding bindings offering ending"
    ).split()
)
_WORKING_ON = re.compile(
    r"^(?:(?:i'?m|i am|we'?re|we are|currently|now|still|meanwhile)\s+)*"
    r"(?:(?:working|workng|wokring|wroking|workin'?|workign|focus(?:s)?ed|focus(?:s)?ing|concentrating) on\b|"
    r"(?:i'?m|i am|we'?re|we are) "
    r"(?:work on|on(?! (?:it|track|hold|call|leave|board|top|the fence)\b)|onto)\s|"
    r"(?:(?:today|this (?:morning|afternoon|session|week)|the day|my day|the session) )?(?:has been|was) "
    r"(?:mostly |all |largely |entirely )?(?:about|spent on)\b)",
    re.I,
)
# Work named as the task: "I've been asked to X", "the goal is to X", "The user asked to X".
_ASKED = re.compile(
    r"^(?:(?:i'?ve|i have|we'?ve|we have) been|i was|we were|i'?m|i am|we'?re|we are) (?:asked|told|tasked)"
    r"(?: by \S+(?: \S+)?)? (?:to|with)\s+|^(?:the|my|our|this) (?:goal|task|job|aim|ask|request|ticket) "
    r"(?:here )?(?:is|was) (?:to\s+)?|"
    r"^(?:the |our |my )?(?:user|client|customer|pm|boss|lead|manager|product|team lead) "
    r"(?:has )?(?:asked|wants|requested|told (?:me|us)) (?:me |us )?(?:to |for )?",
    re.I,
)

# Work that starts now and replaces the task: "starting on X", "moving on to X", "switching to X".
_SWITCH = re.compile(
    r"^(?:(?:i'?m|i am|we'?re|we are|now|next,?|then,?|(?:the )?\w+ (?:is|are))\s+)*"
    r"(?:starting(?: (?:on|with))?|moving on(?: ?to)?|moving onto|switching(?: over)? to|turning to|"
    r"pivoting to|picking up|kicking off|onto|"
    r"on to(?: the next thing)?:?)\s+",
    re.I,
)
# Words before the clause that say when, not what ("Tomorrow I want to", "Meanwhile continuing").
_LEAD_TIME = re.compile(
    r"^(?:(?:tomorrow|today|tonight|later(?: today)?|this (?:morning|afternoon|evening|week)|"
    r"after lunch|next session|first thing|meanwhile|also|ok(?:ay)?|so(?! far\b)|right|anyway|then|and|"
    r"alright|note to self|tl;?dr|where (?:i|we) (?:am|are)(?: at)?(?: is)?|"
    r"with (?:that|this|it) (?:closed|done|merged|shipped|finished|sorted|out of the way))\b,?:?\s+)+",
    re.I,
)
# "Spent the morning moving the docs": the time is no part of the work.
_SPENT = re.compile(
    r"^(?:i |we )?spent (?:the|this|all|most of the|a|an|some|half the)? ?\w+ (?=\w+ing\b|on\b)", re.I
)
# A person saying what they are doing ("I'm fixing the crash", "we are porting X"): work, even
# when it names a failure; unless the verb says what happens to them ("I'm getting a 500").
_SUBJECT_ING = re.compile(
    r"^(?:i'?m|i am|we'?re|we are|i'?ve been|we'?ve been|been|currently|we were|i was)\s+(?:\w+ly\s+)?"
    r"(?:working on\b|"
    r"(?!getting|seeing|hitting|having|running into|failing|crashing|struggling|stuck)[a-z]{2,}ing\b)",
    re.I,
)
# What stops being a problem: "gone", "no longer flags it", "doesn't happen anymore", "happy now".
_RESOLVED = re.compile(
    r"\b(?:gone|no longer (?!works?\b)\w+|any ?more|no more \w+|resolved|sorted|solved|unblocked|"
    r"(?:happy|fine|stable|clean|ok|okay) now|(?:works?|working|passes|passing|accepted) again|"
    r"is stable)\b",
    re.I,
)
_IMPERATIVE = re.compile(
    r"^(?:please\s+)?(?:add|fix|make|build|write|implement|create|refactor|investigate|debug|remove|"
    r"delete|update|migrate|port|rename|move|replace|support|allow|ensure|improve|speed up|"
    r"optimi[sz]e|clean up|set up|upgrade|convert|split|extract|document|test|deploy|release|"
    r"handle|change|rewrite|design|choose|review|paginate|get|find|check)\b"
    r"(?!\s+(?:says|said|is|are|was|were|wants|thinks|has|had|looks|team|teams)\b)",  # "Design says ..."
    re.I,
)
# The work as a whole is finished: "closing this out", "Idempotency work is complete", "Incident closed".
_TASK_FINISHED = re.compile(
    r"^(?:(?:i'?m|we'?re)\s+)?(?:closing (?:this|it) out|wrapping (?:this|it) up|that'?s (?:it|all) done|"
    r"all done)\b|\b(?:work|task|ticket|incident|story|epic|feature|migration|upgrade|refactor)\s+"
    r"(?:is |are )?(?:now )?(?:complete|completed|done|closed|finished|wrapped up)\b|"
    r"^marking (?:it|this|the \w+(?: \w+)?) (?:as )?done\W*$",
    re.I,
)
# A fix stated without naming what it fixed: "fixed.", "Clamped p to 1e-6, fixed", "fix shipped in 5.12.1".
_UNNAMED_FIX = re.compile(
    r"(?:^|[,.;]\s*)(?:(?:it'?s|that'?s|this is|now)\s+)?(?:fixed|resolved|solved|sorted)"
    r"(?:\s+(?:it|that|this|now|too))?\W*$|"
    r"^(?:the )?fix (?:is )?(?:shipped|merged|deployed|landed|released|is in|went out)\b|^fixed\W*(?:$|,)|"
    r"\bblockers? (?:is |are )?(?:now )?(?:resolved|gone|sorted|fixed|cleared|solved|unblocked)\b|"
    r"(?:^|[,.;]\s*)(?:(?:all|\d+/\d+|tests?|suite|ci|build)\s+)*(?:green|passing|passes)(?:\s+(?:now|again))?\W*$",
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


# Cut points inside a sentence where the subject may change: kept only when the parts say
# different kinds of things ("tz fixed, json flag done, merged. starting completions now").
_WEAK_SPLIT = re.compile(r",\s+|\s+[-–—]\s+|\s+but\s+|\s+[-=]>\s+", re.I)
_CLAUSE_SPLIT = re.compile(
    r"\s*;\s+|,\s+(?=(?:but|now|then|and then|next|still|so|using|which means)\b)"
    r"|\s+(?=but\s+\S+\s+(?:still|fails?)\b)",
    re.I,
)
_LEAD_WORDS = re.compile(r"^(?:but|and|so(?! far\b)|and then|which means)\s+", re.I)


def clauses(sentence: str) -> list[str]:
    """A sentence cut where it changes subject: at ``;``, ``, but``, ``, now``, ``, then``, and at
    commas and dashes where what is said changes kind (a completion, then a blocker)."""
    return [text for text, _hint in read_clauses(sentence)]


def read_clauses(sentence: str) -> list[tuple[str, Kind | None]]:
    """``clauses`` with the kind their first telling piece says ("fold_overflow.kc passes now —
    folder takes bit width from the IR type" is a completion though its whole reads as none)."""
    parts = [p.strip(" ,.") for p in _CLAUSE_SPLIT.split(sentence)]
    out: list[tuple[str, Kind | None]] = []
    for part in (_LEAD_WORDS.sub("", p) for p in parts):
        if len(part) >= 2:
            out.extend(_by_kind(part))
    return out


def _by_kind(clause: str) -> list[tuple[str, Kind | None]]:
    """``clause`` cut at commas, dashes and "but" where the kind changes; a piece no rule reads
    stays with the piece before it (or, first, with the one after it)."""
    pieces: list[str] = []
    seps: list[str] = []
    last = 0
    for cut in _WEAK_SPLIT.finditer(clause):
        if clause.count("(", 0, cut.start()) > clause.count(")", 0, cut.start()):
            continue  # inside parentheses: one aside
        pieces.append(clause[last : cut.start()])
        seps.append(cut.group())
        last = cut.end()
    pieces.append(clause[last:])
    if len(pieces) == 1:
        return [(clause, None)]
    kinds = [_kind_of_piece(p, first=i == 0) for i, p in enumerate(pieces)]
    groups: list[tuple[Kind | None, str]] = []
    for i, (piece, kind) in enumerate(zip(pieces, kinds, strict=True)):
        joined = seps[i - 1] if i else ""
        if groups and (kind is None or kind == groups[-1][0] or groups[-1][0] is None):
            prev_kind, text = groups[-1]
            groups[-1] = (prev_kind or kind, text + joined + piece)
        else:
            groups.append((kind, piece))
    return [(text.strip(" ,."), kind) for kind, text in groups if text.strip(" ,.")]


#: kinds a piece says clearly enough to stand apart ("task" read without a request is one someone
#: asked for: "karpenter is on hold -> boss wants the pg upgrade first")
_TELLING: frozenset[Kind] = frozenset({"done", "blocker", "next", "question", "progress", "switch", "task"})


def _kind_of_piece(piece: str, *, first: bool) -> Kind | None:
    """The kind a piece between commas says on its own, if it clearly says one (ongoing work
    after a comma is a modifier: "Refactor X, keeping Y intact"; first, it is the subject)."""
    kind = classify(piece, first_task=False)
    if kind == "ongoing":  # said by someone ("I'm on cutting it down"), it is no modifier
        return kind if first or _said_by_someone(piece) else None
    return kind if kind in _TELLING else None


def _said_by_someone(text: str) -> bool:
    text = _strip_lead(text.strip())
    return bool(_SUBJECT_ING.search(text) or re.match(r"(?:i'?m|i am|we'?re|we are)\b", text, re.I))


# A tracker id opening a line ("[PAY-1422] Add SEPA ...", "ABC-12: fix ..."): the words after it say the kind.
_TICKET_PREFIX = re.compile(r"^\[?(?:[A-Z][A-Z0-9]+-\d+|#\d+)\]?:?\s+")
TICKET_ID = re.compile(r"\b[A-Z][A-Z0-9]+-\d+\b|(?<!\w)#\d+\b")


def _strip_lead(text: str) -> str:
    """Without the words that say when ("Tomorrow", "Spent the morning"): "Spent the morning on
    X" is work on X."""
    text = _LEAD_TIME.sub("", _TICKET_PREFIX.sub("", text))
    spent = _SPENT.match(text)
    if spent is None:
        return text
    rest = text[spent.end() :]
    return f"working {rest}" if rest[:3].lower() == "on " else rest


def _works_now(text: str) -> bool:
    found = _WORKS_END.search(text)
    return found is not None and found.group("before").lower() not in _WORKS_NOT_AFTER


def _done(text: str) -> bool:
    start = _DONE_START.search(text)
    if start and not (start.group("past") and start.group("past").lower() in _NOT_DONE):
        return True
    if _DONE_ANYWHERE.search(text) or _works_now(text) or _RESOLVED.search(text):
        return True
    end = _PARTICIPLE_END.search(text)
    return bool(end and end.group("word").lower() not in _NOT_DONE and not _NEGATION.search(text))


def _blocker(text: str) -> bool:
    return bool(_BLOCKER.search(text) or _ERROR_NAME.search(text) or _STILL_SYMPTOM.search(text))


def _ongoing(text: str) -> bool:
    if _WORKING_ON.search(text):
        return True
    gerund = _GERUND_START.search(text)
    if gerund is None or not (gerund.group("verb").islower() or gerund.group("verb").istitle()):
        return False  # "webRequestBlocking rules rewritten": a name, not work going on
    after = (gerund.group("after") or "").lower()
    if after in _SUBJECT_VERBS:
        return False  # the -ing word is the subject: "Folding works for integers"
    return gerund.group("verb").lower() not in _ING_NOUNS or after in _OBJECT_START


def classify(clause: str, *, first_task: bool) -> Kind | None:
    """The kind of one prose clause (None: a statement no field holds; the journal keeps it).
    ``first_task``: no task was stated yet in this checkpoint (a request can become it).

    "ongoing" is work going on named in prose ("Refactoring the parser"): the task when none
    was named, else the step in progress (the merger knows which); "switch" is work that starts
    now and replaces the task ("starting on X", "moving on to X")."""
    text = _strip_lead(clause.strip())
    bare = re.sub(r"\s*\([^)]*\)", "", text).strip() or text  # asides say no kind
    if text.endswith("?") or _QUESTION_START.search(text) or _QUESTION_ANYWHERE.search(text):
        return "question"
    if _GOTCHA_START.search(text):
        return "gotcha"
    commit = _COMMIT_SUBJECT.search(text)
    if commit:
        return "progress" if commit.group("wip") else "done"
    if _TASK_FINISHED.search(bare):
        return "done"
    if _SWITCH.search(text):
        return "switch"
    if _ASKED.search(text):
        return "task"
    if (_SUBJECT_ING.search(text) or _WORKING_ON.search(text)) and not _NEXT_START.search(text):
        return "ongoing"

    if _DECISION_START.search(text):
        return "decision"
    if _NEXT_FIRM.search(text):
        return "next"  # "Still need to check X, can't find the email": what is left, not a failure
    done = _done(bare)
    if _blocker(text) and not done:
        return "blocker"
    if _NEXT_START.search(text) or _NEXT_END.search(bare):
        return "next"
    if _partial(text):
        return "progress"
    if done:
        return "done"
    if _DECISION.search(text) or _USING.search(text):
        return "decision"
    if content_free(text):
        return None
    if _ongoing(text):
        return "ongoing"
    if _IMPERATIVE.search(text):
        return "task" if first_task else "next"
    return None


# "looking into it now", "on it": the item named is the work from now on
_ON_IT_NOW = re.compile(
    r"\b(?:looking into it|on it|starting (?:on )?it|working on it|digging in(?:to it)?|"
    r"investigating(?: it)?)(?: now| right now)?\W*$",
    re.I,
)


def starts_now(text: str) -> bool:
    """A next item that says it is being done now ("ANR in SyncWorker, looking into it now")."""
    return _ON_IT_NOW.search(text.strip()) is not None


def work_of(clause: str) -> str:
    """The work a task, switch or ongoing clause names, without the words that introduce it
    ("I've been asked to X" -> "X", "starting on X now" -> "X now")."""
    text = _strip_lead(clause.strip())
    for cue in (_ASKED, _SWITCH):
        found = cue.search(text)
        if found:
            rest = text[found.end() :].strip()
            return rest[:1].upper() + rest[1:] if rest else text
    return text


def finishes_task(clause: str) -> bool:
    """The clause says the work as a whole is finished ("closing this out", "work is complete")."""
    return _TASK_FINISHED.search(clause.strip()) is not None


def unnamed_fix(clause: str) -> bool:
    """The clause says something was fixed without naming it ("fixed.", "fix shipped in 5.12.1")."""
    return _UNNAMED_FIX.search(clause.strip()) is not None


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
