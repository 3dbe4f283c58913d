"""What is left, as a session shows it: the assistant's stated plans, tracker listings, approved
plans, and decisions stated in the assistant's reasoning.

* A plan: a lead line that announces work to come ("Next steps:", "Remaining:", "I'll update:",
  "Still needed for gqc.6:", "Plan:") followed by a list (numbered, bulleted, checkboxes). The
  newest plan replaces the one before it.
* ``ExitPlanMode``: the plan the user approved; its numbered or bulleted steps (or its headings).
* A tracker listing: ``bd ready`` / ``bd list`` (beads), ``gh issue list``: open items with
  their titles; ``bd show`` of an epic: its children that are not closed.
* A decision: a sentence of the assistant's that chooses ("instead of", "rather than",
  "decided", "I'll go with", "the fix is", "root cause").
* A hook's rule: the feedback of a hook that kept Claude Code from stopping ("Stop hook
  feedback: ... Cannot exit with unstaged changes."), a rule of this project's set-up.
"""

from __future__ import annotations

import re

from ..redact import redact
from .nudge import MARK as NUDGE_MARK

STEP_CHARS = 240
MAX_STEPS = 15
DECISION_CHARS = 300

_LEAD = re.compile(
    r"(?:next steps?|remaining|still (?:need(?:ed)?|to do|left)|left to do|todo|to do|plan|"
    r"i'?ll (?:now )?(?:update|do|implement|add|fix|change|make|create|write|need)|"
    r"let me (?:implement|update|fix|do|add|make|create|write)|"
    r"(?:we|i) (?:still )?need to|what'?s left|pending|follow[- ]ups?|to finish)\b[^\n]{0,80}:\s*$",
    re.I,
)
_ITEM = re.compile(r"^[ \t]*(?:[-*•]|\d{1,2}[.)]|\[[ xX]\])[ \t]+(?:\[[ xX]\][ \t]+)?(.+)$")
_DONE_BOX = re.compile(r"^[ \t]*(?:[-*•][ \t]+)?\[[xX✓✔]\]")
_MD = re.compile(r"\*\*|__")


def _clip(text: str, limit: int) -> str:
    flat = " ".join(redact(_MD.sub("", text)).split())
    return flat if len(flat) <= limit else flat[: limit - 1].rsplit(" ", 1)[0].rstrip(",;:") + "…"


def plan_in(text: str) -> list[str] | None:
    """The steps of the last plan ``text`` states (None when it states none)."""
    lines = text.splitlines()
    found: list[str] | None = None
    index = 0
    while index < len(lines):
        if not _LEAD.search(lines[index].strip().rstrip("*").strip()):
            index += 1
            continue
        steps: list[str] = []
        index += 1
        while index < len(lines) and not lines[index].strip():
            index += 1  # a blank line between the lead and its list
        while index < len(lines):
            line = lines[index]
            item = _ITEM.match(line)
            if item is None:
                if line.strip() and steps and line.startswith((" ", "\t")):
                    index += 1  # a continuation line of the item above
                    continue
                break
            if not _DONE_BOX.match(line):
                steps.append(_clip(item.group(1), STEP_CHARS))
            index += 1
        if len(steps) >= 1:
            found = steps[:MAX_STEPS]
    return found


_PLAN_HEADING = re.compile(r"^#{2,4}\s+(?:\d+[.)]\s+|step \d+[:.]?\s*|phase \d+[:.]?\s*)?(.+)$", re.I | re.M)


def approved_plan(plan: str) -> list[str]:
    """The steps of a plan the user approved (``ExitPlanMode``): its top-level list items, else
    its section headings."""
    steps = [
        _clip(m.group(1), STEP_CHARS)
        for line in plan.splitlines()
        if (m := _ITEM.match(line)) is not None and not line.startswith((" ", "\t"))
    ]
    if len(steps) < 2:
        headings = [_clip(m.group(1), STEP_CHARS) for m in _PLAN_HEADING.finditer(plan)]
        steps = [h for h in headings if not re.match(r"(?:context|summary|overview|goal)s?\b", h, re.I)]
    return steps[:MAX_STEPS]


# ---- tracker listings -------------------------------------------------------------------------

_BEADS_LIST = re.compile(r"(?:^|[\s;&|(])(?:bd|br|beads)\s+(ready|list|show)\b")
_GH_LIST = re.compile(r"\bgh\s+issue\s+list\b")
_BEADS_ROW = re.compile(
    r"^\s*(?:\d+\.\s*)?(?:\[[^\]]*\]\s*)*([○◐●✓✔]\s*)?([a-z][\w-]*-[a-z0-9]+(?:\.\d+)*)\b[:\s·]+(.+)$",
    re.I,
)
_CLOSED_MARK = re.compile(r"[✓✔]|\bclosed\b", re.I)
_GH_ROW = re.compile(r"^#?(\d+)\s+(?:OPEN\s+)?(.+?)(?:\t.*)?$")


def tracker_listing(command: str, output: str) -> list[str] | None:
    """Open items a tracker listing printed (None when ``command`` is no listing)."""
    beads = _BEADS_LIST.search(command)
    if beads is not None:
        rows: list[str] = []
        for line in output.splitlines():
            row = _BEADS_ROW.match(line)
            if row is None or _CLOSED_MARK.search(row.group(1) or "") or re.search(r"\bCLOSED\b", line):
                continue
            title = re.sub(r"\[[^\]]*\]", " ", row.group(3)).strip(" ·:-")
            rows.append(_clip(f"{row.group(2)}: {title}", STEP_CHARS))
        if beads.group(1) == "show" and len(rows) <= 1:
            return None  # one item's details, not a listing of what is left
        return rows[:MAX_STEPS]
    if _GH_LIST.search(command):
        rows = []
        for line in output.splitlines():
            row = _GH_ROW.match(line.strip())
            if row is not None and "CLOSED" not in line:
                title = row.group(2).split("\t")[0].strip()
                rows.append(_clip(f"#{row.group(1)}: {title}", STEP_CHARS))

        return rows[:MAX_STEPS]
    return None


# ---- decisions in the assistant's words ----------------------------------------------------------

_CHOICE = re.compile(
    r"\b(?:instead of|rather than|decided|decision|i'?ll go with|we'?ll go with|going with|opted|chose|"
    r"the (?:right |correct |simplest |cleanest )?fix is|root cause|should be skipped|must not|"
    r"better to|prefer(?:red)? |in favou?r of|confirmed|turns out|found that|is actually|"
    r"the (?:real|actual) (?:problem|issue|cause|bug))\b",
    re.I,
)
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z`*])|\n+")
#: a label the assistant put before its own decision ("Decided: ...")
_LABEL = re.compile(r"^(?:\*\*)?(?:decided|decision|note|root cause)(?:\*\*)?\s*:\s*(?:\*\*)?\s*", re.I)


#: Claude Code's wording for a blocking hook's output it hands to the model (a meta user turn)
_HOOK_FEEDBACK = re.compile(r"(\w+) hook feedback:\s*(?:\[[^\]\n]*\]:)?", re.I)


def hook_rule(text: str) -> str | None:
    """What a hook that blocked said, as a rule ("Stop hook: Cannot exit with unstaged
    changes."): its first line that is no heading. None when ``text`` is no hook feedback."""
    found = _HOOK_FEEDBACK.match(text.strip())
    if found is None or NUDGE_MARK in text:  # our own request for a checkpoint is no rule
        return None
    for line in text.strip()[found.end() :].splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            return _clip(f"{found.group(1).capitalize()} hook: {line}", DECISION_CHARS)
    return None


def decisions_in(text: str) -> list[str]:
    """Sentences of the assistant's text that state a choice (at most three, newest last)."""
    found: list[str] = []
    for sentence in _SENTENCE.split(text):
        sentence = _LABEL.sub("", sentence.strip(" -*#>"))
        if len(sentence) >= 30 and _CHOICE.search(sentence) and not sentence.endswith("?"):
            found.append(_clip(sentence, DECISION_CHARS))
    return found[-3:]
