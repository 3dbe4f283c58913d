"""What a person's own words in a session say beyond the request: the rules they set for the work
and the work they put off, and their words inside a rejected tool call.

"Use British spelling", "never store the email in localStorage", "use vi.stubEnv instead of
assigning NODE_ENV" are decisions a next session must not undo; "a proper /auth/me endpoint in
future" is a next step. Read by how people phrase them: the sentence opens with the rule, or
chooses one thing over another; no model, no list of topics.
"""

from __future__ import annotations

import re

_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_RULE = re.compile(
    r"^(?:please\s+|and\s+|but\s+|so\s+)?(?:always|never|don'?t|do not|make sure|avoid|prefer|no more|"
    r"stick to|keep (?:it|them|the|using)|use\b|(?:you|we) (?:need|have|must|should)(?:n'?t)? to\b|"
    r"(?:you|we) (?:must|should)(?:n'?t)?\b|let'?s (?:not|keep|use|stick))|\b(?:instead of|rather than)\b",
    re.I,
)
_LATER = re.compile(r"\b(?:in (?:the )?future|eventually|at some point|as a follow[- ]up|for later)\b", re.I)
#: a tool call the person rejected with words of their own (what to do instead)
_REJECTED_WITH = re.compile(r"To tell you how to proceed, the user said:\s*(.+)", re.S)
_GENERATED_FEEDBACK = "The user wants to clarify"
_REJECTED = "The user doesn't want to proceed with this tool use"


def rules_and_later(text: str) -> tuple[list[str], list[str]]:
    """(rules the person set, work they put off), sentence by sentence, questions left out."""
    rules: list[str] = []
    later: list[str] = []
    for sentence in _SENTENCE.split(text):
        sentence = " ".join(sentence.split()).strip(" -*")
        if not 12 <= len(sentence) <= 300 or sentence.endswith("?"):
            continue
        if _LATER.search(sentence):
            later.append(sentence)
        elif _RULE.search(sentence):
            rules.append(sentence)
    return rules, later


#: a question that asks for work ("can you add tests?", "could we ...", "would you mind ...")
_ASKS_FOR_WORK = re.compile(
    r"^(?:please\b|(?:can|could|would|will) (?:you|we|u)\b|how about\b|what about\b|shall we\b|"
    r"(?:do|did) you mind\b|is it possible\b|let'?s\b)",
    re.I,
)


_YES_NO = re.compile(
    r"^(?:is|are|was|were|do|does|did|have|has|had|isn'?t|aren'?t|didn'?t|doesn'?t|hasn'?t|haven'?t)\b"
    r"|\b(?:yeah|right|correct|no|yes|ok|okay)\s*\?$",
    re.I,
)


def asks_only(text: str) -> bool:
    """A short yes/no question about the work rather than a request for it ("we added that test
    in this PR yeah?", "is the build green?"): an answer is wanted, not a new task."""
    flat = " ".join(text.split())
    return (
        flat.endswith("?")
        and len(flat) <= 200
        and bool(_YES_NO.search(flat))
        and not _ASKS_FOR_WORK.search(flat)
    )


def is_rejection(result_text: str) -> bool:
    """The tool call was refused by the person (Claude Code's words for it)."""
    return result_text.lstrip().startswith(_REJECTED)


def rejection_words(result_text: str) -> str:
    """The person's words in a rejected tool call's result ("" when none, or when the words are
    Claude Code's own, as when a question form is sent back to be clarified)."""
    found = _REJECTED_WITH.search(result_text)
    if found is None or found.group(1).startswith(_GENERATED_FEEDBACK):
        return ""
    return found.group(1).strip()
