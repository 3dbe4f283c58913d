"""What every merge keeps whatever tier made it: the journal of texts as written, Claude Code's
latest compaction summary, and the state within its token cap with a word about anything trimmed.

The journal is the "nothing said is lost" part of the brain: each checkpoint's text, redacted,
dated, with the surface it came from. Extraction adds structure beside it and never replaces it.
It is bounded (``JOURNAL_ENTRIES`` entries, ``JOURNAL_ENTRY_CHARS`` characters an entry, and the
state's token cap); what a bound drops is named in the checkpoint's warnings, oldest first. An LLM
tier never writes these fields: they are set here, after its answer, from the old state and the
facts.
"""

from __future__ import annotations

from datetime import datetime

from ..facts import ContextFacts
from ..models import JournalEntry, ProjectState
from .integrity import fit_to_cap

JOURNAL_ENTRIES = 50
#: transcripts whose hand-off offset a state remembers (the newest)
MAX_TRANSCRIPTS = 30

JOURNAL_ENTRY_CHARS = 12_000


def _preview(text: str, words: int = 8) -> str:
    head = " ".join(text.split()[:words])
    return head + ("…" if len(text.split()) > words else "")


def journal_after(
    old: list[JournalEntry], facts: ContextFacts, now: datetime
) -> tuple[list[JournalEntry], list[str]]:
    """The journal with this checkpoint's text added (and ``/compact`` instructions), bounded."""
    journal = [e.model_copy() for e in old]
    warnings: list[str] = []
    new: list[JournalEntry] = []
    if facts.compact_focus.strip():
        new.append(JournalEntry(at=now, text=facts.compact_focus.strip(), origin="/compact"))

    text = facts.text.strip()
    if text:
        if len(text) > JOURNAL_ENTRY_CHARS:
            warnings.append(
                f"the text is {len(text):,} characters: the journal keeps its first "
                f"{JOURNAL_ENTRY_CHARS:,} (send a summary, or split it over checkpoints)"
            )
            text = text[:JOURNAL_ENTRY_CHARS].rsplit(" ", 1)[0] + " …"
        new.append(JournalEntry(at=now, text=text, origin=facts.origin))
    for entry in new:
        if journal and journal[-1].text == entry.text:
            continue  # the same text again: one entry
        journal.append(entry)
    if len(journal) > JOURNAL_ENTRIES:
        dropped = journal[: len(journal) - JOURNAL_ENTRIES]
        journal = journal[len(dropped) :]
        warnings.append(dropped_warning(dropped))
    return journal, warnings


def dropped_warning(dropped: list[JournalEntry]) -> str:
    first = dropped[0]
    when = first.at.strftime("%Y-%m-%d %H:%M")
    more = f" and {len(dropped) - 1} more" if len(dropped) > 1 else ""
    return (
        f"journal full: dropped the oldest entr{'y' if len(dropped) == 1 else 'ies'} "
        f"({when} “{_preview(first.text)}”{more}); older versions in history still hold "
        f"{'it' if len(dropped) == 1 else 'them'}"
    )


def finish(
    state: ProjectState, old: ProjectState | None, facts: ContextFacts, now: datetime, token_cap: int
) -> tuple[ProjectState, list[str]]:
    """``state`` as any tier merged it, with the journal and the compaction summary set from the
    old state and the facts, then fitted to ``token_cap``; plus warnings naming what was trimmed."""
    state = state.model_copy(deep=True)
    handoffs = dict(old.meta.handoffs) if old is not None else {}
    if facts.handoff is not None:
        handoffs.pop(facts.handoff.key, None)
        handoffs[facts.handoff.key] = facts.handoff.offset
    state.meta.handoffs = dict(list(handoffs.items())[-MAX_TRANSCRIPTS:])
    journal, warnings = journal_after(old.journal if old is not None else [], facts, now)
    state.journal = journal
    summary = facts.compact_summary
    if summary is None and old is not None:
        summary = old.compact_summary

    if summary is not None and "summary" in facts.settled:
        summary = summary.model_copy(update={"settled": True})
    state.compact_summary = summary

    fitted, trimmed = fit_to_cap(state, token_cap)
    return fitted, [*warnings, *trimmed]
