"""Context facts: what happened since the last checkpoint, as one structured model.

Four producers fill it: the transcript digest (``transcript/digest.py``, Claude Code sessions,
including Claude Code's own compaction summary), the notebook recorder (cells, errors, variables),
free text (``merge/extract.py`` reads the labelled lines and prose people and models write into
``checkpoint``; the text itself travels too, as ``text``, so nothing said is lost) and the structured
fields a model sends through the MCP ``checkpoint`` tool (``stated``). Mergers consume it directly:
the offline merger places each fact, the LLM tiers get it as JSON beside the text as written. No
layer renders facts as text for another layer to parse back.

Paths are project-relative POSIX paths when the file lies inside the project (or inside the
folder the recorded session started in), absolute otherwise; whether they exist now is not
checked here (a replay or a deleted file is still worth naming).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

TaskStatus = Literal["pending", "in_progress", "completed"]
CheckKind = Literal["test", "lint", "typecheck", "build", "vcs", "run", "other"]
TrackerAction = Literal["claimed", "closed", "created", "reopened", "viewed"]


class _Fact(BaseModel):
    model_config = ConfigDict(extra="ignore", defer_build=True)


class TaskItem(_Fact):
    """One entry of the assistant's task list (TodoWrite / TaskCreate / TaskUpdate)."""

    content: str
    status: TaskStatus = "pending"
    #: the task's id in an incremental task list (TaskCreate / TaskUpdate)
    id: str = ""


class TrackerEvent(_Fact):
    """An issue tracker touched from the shell (``bd update X --status in_progress``, ``gh issue
    close 12``...): the id, what was done, the title when the tool printed it."""

    item: str
    action: TrackerAction
    title: str = ""


class CommandRun(_Fact):
    command: str
    kind: CheckKind = "other"
    #: the normalised check (``mix test test/a.exs``) for test/lint/typecheck/build/vcs runs
    check: str = ""
    #: None when no result was seen (still running, or cut off by the window)
    ok: bool | None = None
    failure_lines: list[str] = Field(default_factory=list)


class Commit(_Fact):
    sha: str = ""
    subject: str
    files: list[str] = Field(default_factory=list)


class Failure(_Fact):
    """A check whose latest run failed and that no later run has fixed, or (``stated``) a blocker
    someone wrote down ("Blockers: CI is red on the login test")."""

    check: str
    lines: list[str] = Field(default_factory=list)
    stated: bool = False
    #: attempts that did not fix it (stated, or earlier failing runs of the same check)
    tried: list[str] = Field(default_factory=list)


class DecisionFact(_Fact):
    decision: str
    #: the question it answers, when known (AskUserQuestion, "Question: ... / Decided: ...")
    question: str = ""
    #: why ("because ...", the reason a model gives with a structured decision)
    reason: str = ""


class QuestionFact(_Fact):
    text: str
    #: asked by the assistant (closed as soon as the user answers) or written as an open question
    from_assistant: bool = False
    answer: str | None = None


class StatedDecision(_Fact):
    # what a client sends: an unknown key is refused (named), not dropped
    model_config = ConfigDict(extra="forbid", defer_build=True)

    decision: str = Field(max_length=4_000, description="What was decided.", examples=["use authlib"])
    reason: str = Field("", max_length=4_000, description="Why: what would break if it were undone.")


class StatedBlocker(_Fact):
    model_config = ConfigDict(extra="forbid", defer_build=True)

    blocker: str = Field(
        max_length=4_000, description="What blocks the work.", examples=["codesign fails on CI"]
    )

    tried: list[str] = Field(
        default_factory=list,
        max_length=50,
        description="What was tried against it and did not work.",
        examples=[["re-importing the certificate"]],
    )


class Stated(_Fact):
    """What a model (or a person) states in structured checkpoint fields. Merged as given, by the
    rules written once in ``merge/stated.py``: ``task`` and ``in_progress`` replace, ``next_steps``
    and ``blockers`` replace the lists when given, everything else is added."""

    task: str = ""
    in_progress: str = ""
    next_steps: list[str] | None = None
    done: list[str] = Field(default_factory=list)
    decisions: list[StatedDecision] = Field(default_factory=list)
    blockers: list[StatedBlocker] | None = None
    files: list[str] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
    gotchas: list[str] = Field(default_factory=list)

    def is_empty(self) -> bool:
        return not any(getattr(self, name) for name in type(self).model_fields) and (
            self.next_steps is None and self.blockers is None
        )


class CompactSummary(_Fact):
    """Claude Code's own summary of a session, written when it compacts the context (the
    ``isCompactSummary`` entry after ``compact_boundary``), read part by part."""

    #: when it was written (the transcript entry's timestamp), as written
    written_at: str = ""
    request: str = ""
    pending: list[str] = Field(default_factory=list)
    current_work: str = ""
    next_step: str = ""
    errors_and_fixes: list[str] = Field(default_factory=list)
    #: what its "Problem Solving" part says was worked out
    solved: list[str] = Field(default_factory=list)
    #: rules the user set, read from its "All User Messages" part
    user_rules: list[str] = Field(default_factory=list)
    #: a commit came after it: the work it describes has moved on

    settled: bool = False


class Gotcha(_Fact):
    """Something that failed and how it was made to work (``git add x`` refused an ignored path;
    ``git add -f x`` worked), or a pitfall written down as such."""

    text: str


class TranscriptCursor(_Fact):
    """How far a hand-off read a transcript (by the key of its path): stored with the version it
    makes, in the same write, so a hand-off run again after a crash knows it is done."""

    key: str
    offset: int = Field(ge=0)


#: fields that describe the stretch rather than say something happened in it
_BOOKKEEPING = frozenset({"source", "tool_uses", "origin", "excerpt", "handoff"})


class ContextFacts(_Fact):
    source: Literal["text", "transcript", "notebook"] = "text"
    #: the surface the checkpoint came from ("mcp", "cli", "editor", "notebook", "hook"), for the journal
    origin: str = ""
    #: the transcript stretch these facts were read from (a hand-off), stored with the version
    handoff: TranscriptCursor | None = None

    #: the checkpoint's text as written (redacted): kept whole in the journal, never replaced
    text: str = ""
    #: structured fields a model or person stated (the MCP ``checkpoint`` tool's fields)
    stated: Stated | None = None
    #: Claude Code's own summary, when the stretch holds a compaction
    compact_summary: CompactSummary | None = None
    #: what the user asked ``/compact`` to focus on (the user's intent at that point)
    compact_focus: str = ""

    #: the assistant's latest stated plan ("Next steps:", "Remaining:", a numbered plan, an
    #: approved plan-mode plan): replaces the plan seen before (None: no plan stated)
    plan: list[str] | None = None
    #: open items the latest tracker listing showed (``bd ready``, ``gh issue list``), with titles
    open_items: list[str] | None = None
    #: a commit came after the plan / Claude Code's summary stated their steps: those are settled
    settled: list[Literal["plan", "summary"]] = Field(default_factory=list)
    #: the stretch in its own words, newest kept within a budget (the user's requests, the
    #: assistant's text, failing output): what an LLM merger reads beside the facts
    excerpt: list[str] = Field(default_factory=list)

    gotchas: list[Gotcha] = Field(default_factory=list)
    #: files edited since the last passing test or build run of this stretch
    unverified: list[str] = Field(default_factory=list)
    #: a passing test or build run was seen after the last edit: earlier unverified files are settled
    verified: bool = False
    #: files removed (``rm``, ``git rm``) and moved (``mv``, ``git mv``: old -> new)
    files_removed: list[str] = Field(default_factory=list)
    files_moved: dict[str, str] = Field(default_factory=dict)
    #: the user's real requests, oldest first (acknowledgements like "continue" are not requests)
    requests: list[str] = Field(default_factory=list)
    #: the user said something (a request or an acknowledgement): open assistant questions close
    user_replied: bool = False
    #: the task list as it stood at the end (None: no task-list tool was used)
    tasks: list[TaskItem] | None = None
    #: changes to an incremental task list (TaskCreate / TaskUpdate) by id: an item whose
    #: ``content`` is "" was only updated here (its subject is the one stored before)
    task_updates: dict[str, TaskItem] = Field(default_factory=dict)
    tasks_deleted: list[str] = Field(default_factory=list)
    #: the subtask in progress when stated explicitly (free text "In progress: ...")
    in_progress: str = ""
    #: work going on named in prose ("Refactoring the parser"): the task when none was named,
    #: else the step in progress (the merger knows which)
    ongoing: list[str] = Field(default_factory=list)
    #: the text says the work as a whole is finished ("closing this out", "the migration is done")
    task_finished: bool = False
    #: the text says something was fixed without naming it ("fixed.", "fix shipped in 5.12.1")
    unnamed_fix: bool = False
    tracker: list[TrackerEvent] = Field(default_factory=list)
    files_edited: list[str] = Field(default_factory=list)
    #: names an edit defined or changed in each file (functions, classes, modules), newest last
    edited_symbols: dict[str, list[str]] = Field(default_factory=dict)
    files_read: list[str] = Field(default_factory=list)
    #: files named in free text (existing ones only: free text cannot tell a path from a word)
    files_mentioned: list[str] = Field(default_factory=list)
    commands: list[CommandRun] = Field(default_factory=list)
    commits: list[Commit] = Field(default_factory=list)
    #: files edited after the last commit of this stretch (all edits when there was no commit)
    uncommitted: list[str] = Field(default_factory=list)
    #: git reported a clean working tree: earlier uncommitted files are settled
    clean_tree: bool = False
    #: checks that failed last and stay failed at the end of this stretch
    failures: list[Failure] = Field(default_factory=list)
    #: checks whose latest run passed (they settle older failures of the same check)
    passed_checks: list[str] = Field(default_factory=list)
    #: what the assistant said it did before each passing check (how an older failure was fixed)
    fix_notes: dict[str, str] = Field(default_factory=dict)
    #: turn-ending replies of the assistant, oldest first
    conclusions: list[str] = Field(default_factory=list)
    #: the assistant's latest narration: what it was doing when the stretch ended
    last_step: str = ""
    #: the narrations before it, oldest first (a few)
    earlier_steps: list[str] = Field(default_factory=list)
    #: the git branch the session was on at the end (Claude Code records it on every entry)
    branch: str = ""
    decisions: list[DecisionFact] = Field(default_factory=list)
    questions: list[QuestionFact] = Field(default_factory=list)
    completions: list[str] = Field(default_factory=list)
    next_steps: list[str] = Field(default_factory=list)
    overview: list[str] = Field(default_factory=list)
    architecture: list[str] = Field(default_factory=list)
    #: prose that fits no other field
    notes: list[str] = Field(default_factory=list)
    #: notebook namespace summary ("df: DataFrame shape (3, 2)"), never values
    variables: list[str] = Field(default_factory=list)
    tool_uses: int = 0

    def is_empty(self) -> bool:
        """Nothing happened: every field but the bookkeeping is empty. (A clean working tree, a
        reply that answers the assistant's question or a passing re-run is something.)"""
        return not any(getattr(self, name) for name in type(self).model_fields if name not in _BOOKKEEPING)

    def combined(self, other: ContextFacts) -> ContextFacts:
        """These facts followed by ``other``'s (lists appended, later scalars win)."""
        merged = self.model_copy(deep=True)
        for name in type(self).model_fields:
            mine, theirs = getattr(merged, name), getattr(other, name)
            if isinstance(mine, list) and isinstance(theirs, list):
                setattr(merged, name, [*mine, *theirs])
            elif name == "tasks":
                merged.tasks = theirs if theirs is not None else mine
            elif name in {"user_replied", "clean_tree", "verified", "task_finished", "unnamed_fix"}:
                setattr(merged, name, mine or theirs)
            elif name in {"files_moved", "task_updates", "fix_notes"}:
                setattr(merged, name, {**mine, **theirs})
            elif name == "edited_symbols":
                merged.edited_symbols = {
                    path: list(dict.fromkeys([*mine.get(path, []), *theirs.get(path, [])]))
                    for path in {**mine, **theirs}
                }
            elif name in {"plan", "open_items"}:
                setattr(merged, name, theirs if theirs is not None else mine)
            elif name == "text":
                merged.text = "\n\n".join(t for t in (mine, theirs) if t)
            elif name == "tool_uses":
                merged.tool_uses = mine + theirs
            elif name == "source":
                merged.source = theirs if theirs != "text" else mine
            elif theirs:
                setattr(merged, name, theirs)
        return merged


def map_strings(facts: ContextFacts, transform: Callable[[str], str]) -> ContextFacts:
    """A copy of ``facts`` with ``transform`` applied to every string (redaction)."""

    def walk(value: object) -> object:
        if isinstance(value, str):
            return transform(value)
        if isinstance(value, list):
            return [walk(v) for v in value]
        if isinstance(value, dict):
            return {k: walk(v) for k, v in value.items()}
        return value

    data = walk(facts.model_dump())
    return ContextFacts.model_validate(data)
