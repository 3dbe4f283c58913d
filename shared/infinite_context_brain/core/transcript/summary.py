"""Claude Code's own compaction summary, read part by part.

When Claude Code compacts a session it writes a ``compact_boundary`` system entry and, right
after it, a user entry with ``isCompactSummary`` whose text is its summary of everything before:
numbered sections in a fixed order (Primary Request and Intent, Key Technical Concepts, Files and
Code Sections, Errors and Fixes, Problem Solving, All User Messages, Pending Tasks, Current Work,
Optional Next Step). Headings come as ``7. Pending Tasks:``, ``**7. Pending Tasks:**`` or
``## 7. Pending Tasks``, sometimes with a note in parentheses ("Pending Tasks (from task list):"),
in English whatever the session's language. After ``/clear`` Claude Code keeps none of it; the
brain keeps the parts a next session needs: what is pending, the current work, the next step, the
errors and their fixes, the request.
"""

from __future__ import annotations

import re

from ..facts import CompactSummary
from ..redact import redact
from .user_words import rules_and_later

#: a pending item Claude Code itself marks as settled ("Task #1 [pending]: ... RESOLVED in #172")
_SETTLED = re.compile(r"\b(?:RESOLVED|DONE|COMPLETED|FIXED)\b|\(done\)|✓|✅")


_HEADING = re.compile(
    r"^[ \t]*(?:#{1,6}[ \t]*)?(?:\*\*)?[ \t]*(\d{1,2})\.[ \t]*(?:\*\*)?[ \t]*([A-Za-z][A-Za-z &/,'-]*?)"
    r"[ \t]*(?:\([^)\n]*\))?[ \t]*:?[ \t]*(?:\*\*)?[ \t]*:?[ \t]*$",
    re.M,
)
_BULLET = re.compile(r"^([ \t]*)(?:[-*•]|\d{1,2}[.)])[ \t]+(.*)$")
_TRAILER = re.compile(
    r"^\s*(?:If you need specific details from before compaction|Please continue the conversation)", re.M
)

_NOTHING = re.compile(r"^\W*(?:no|none)\b[^.]{0,60}(?:encountered|so far|pending|yet)?\W*$", re.I)
PART_CHARS = 2_000

ITEM_CHARS = 300
MAX_ITEMS = 15
MAX_ERRORS = 6


def is_summary_text(text: str) -> bool:
    return text.lstrip().startswith("This session is being continued from a previous conversation")


def _part_name(title: str) -> str | None:
    title = title.lower()
    for key, name in (
        ("pending", "pending"),
        ("current work", "current_work"),
        ("next step", "next_step"),
        ("error", "errors"),
        ("problem solving", "solved"),
        ("user message", "user_messages"),
        ("primary request", "request"),
        ("request", "request"),
    ):
        if key in title:
            return name
    return None


def parts(text: str) -> dict[str, str]:
    """The summary's sections by name ("pending", "current_work", "next_step", "errors",
    "request"); the last one stops at the trailer Claude Code appends. The ``<analysis>`` part
    some versions write before the summary holds drafts of the same sections: only the numbered
    sections after it count (the last heading of each name wins)."""
    found: dict[str, str] = {}
    headings = list(_HEADING.finditer(text))
    for index, heading in enumerate(headings):
        name = _part_name(heading.group(2))
        if name is None:
            continue
        end = headings[index + 1].start() if index + 1 < len(headings) else len(text)
        body = text[heading.end() : end]
        trailer = _TRAILER.search(body)
        if trailer is not None:
            body = body[: trailer.start()]
        found[name] = body.lstrip("\n").rstrip()  # the first bullet keeps its indentation

    return found


def _clip(text: str, limit: int) -> str:
    text = text.strip()
    if len(text) <= limit:
        return text
    return text[: limit - 1].rsplit(" ", 1)[0].rstrip(",;:") + " …"


def _plain(text: str) -> str:
    return re.sub(r"\*\*|__|`(?=`)", "", text)


def items(body: str, limit: int, *, group: bool = False) -> list[str]:
    """The bullets of a part (each with the lines that continue it), at most ``limit``. With
    ``group``, a bullet nested under another continues it ("Error: X" / "Fixed by Y")."""
    out: list[str] = []
    top: int | None = None
    for line in body.splitlines():
        bullet = _BULLET.match(line)
        if bullet:
            depth = len(bullet.group(1).expandtabs(4))
            top = depth if top is None else min(top, depth)
            if group and out and depth > top:
                out[-1] += "; " + bullet.group(2).strip()
            else:
                out.append(bullet.group(2).strip())
        elif out and line.strip() and not line.lstrip().startswith("```"):
            out[-1] += " " + line.strip()
    if not out and body.strip():
        out = [" ".join(body.split())]
    kept = [i for i in out if i.strip() and not _NOTHING.match(i)]
    return [_clip(_plain(i), ITEM_CHARS) for i in kept][:limit]


def read_summary(text: str, written_at: str = "") -> CompactSummary | None:
    """Claude Code's summary as its parts (redacted), or None when ``text`` is not one."""
    if not is_summary_text(text):
        return None
    found = parts(redact(text))
    request = items(found.get("request", ""), 3)
    pending = [p for p in items(found.get("pending", ""), MAX_ITEMS) if not _SETTLED.search(p)]
    rules: list[str] = []
    for message in items(found.get("user_messages", ""), 60):
        rules += rules_and_later(message.strip("\"' "))[0]
    return CompactSummary(
        written_at=written_at,
        request=" / ".join(request),
        pending=pending,
        current_work=_clip(_plain(found.get("current_work", "")), PART_CHARS),
        next_step=_clip(_plain(found.get("next_step", "")), PART_CHARS),
        errors_and_fixes=items(found.get("errors", ""), MAX_ERRORS, group=True),
        solved=items(found.get("solved", ""), MAX_ERRORS, group=True),
        user_rules=[_clip(r, ITEM_CHARS) for r in rules[-MAX_ERRORS:]],
    )
