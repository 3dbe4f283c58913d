"""Structured checkpoint fields (what the model in the session states through the MCP
``checkpoint`` tool), merged as given. The rules, written once here and in the tool's schema:

* ``task``: replaces the current task (the old one is kept as an earlier request unless done);
* ``in_progress``: replaces the subtask in progress;
* ``next_steps``: the whole list of what is left, in order: replaces the stored next steps;
* ``done``: added to recent changes; the next steps and stated blockers they settle go;
* ``decisions`` (with their reason): added; one that answers an open question settles it;
* ``blockers`` (with what was tried): replace the blockers stated before; failing checks seen
  in the session stay until they pass;
* ``files``: put first among the active files;
* ``notes``, ``gotchas``: added.
Fields left out change nothing. The parts that add are folded into the facts the merger reads
(``as_facts``); the parts that replace a list are applied to its result (``apply``).
"""

from __future__ import annotations

from datetime import datetime

from ..facts import ContextFacts, DecisionFact, Gotcha, Stated
from ..models import Blocker, NextStep, ProjectState
from .extract import clean_sentence


def as_facts(stated: Stated) -> ContextFacts:
    """The adding part of ``stated`` as facts (the merger places them like any others)."""
    return ContextFacts(
        source="text",
        stated=stated,
        requests=[stated.task] if stated.task.strip() else [],
        in_progress=stated.in_progress,
        completions=list(stated.done),
        decisions=[DecisionFact(decision=d.decision, reason=d.reason) for d in stated.decisions],
        files_mentioned=list(stated.files),
        notes=list(stated.notes),
        gotchas=[Gotcha(text=g) for g in stated.gotchas],
    )


def apply(state: ProjectState, stated: Stated, now: datetime) -> None:
    """The replacing part of ``stated``, applied to a merged state in place."""
    ac = state.active_context
    if stated.next_steps is not None:
        ac.next_steps = [
            NextStep(text=clean_sentence(s, 300), origin="stated") for s in stated.next_steps if s.strip()
        ]
    if stated.blockers is not None:
        seen = [b for b in ac.blockers if not b.stated]
        ac.blockers = seen + [
            Blocker(
                check=clean_sentence(b.blocker, 400),
                stated=True,
                since=now,
                tried=[clean_sentence(t, 200) for t in b.tried if t.strip()],
            )
            for b in stated.blockers
            if b.blocker.strip()
        ]
