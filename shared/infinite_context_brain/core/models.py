"""Pydantic models shared by the core and every adapter.

``ProjectState`` keeps the seed's JSON schema (``meta`` / ``project_context`` /
``active_context``) so states written by the seed, by an LLM merger or by us read alike.
Result models (``CheckpointResult``, ``StatusReport``...) are what ``ProjectBrain`` returns;
adapters serialise them as they are, so every surface shows the same fields.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from .clock import utcnow
from .facts import CompactSummary, TaskItem
from .memory.model import BudgetStatus
from .merge_plan import MergePlan

__all__ = ["BudgetStatus", "utcnow"]  # re-exported: callers import both from here

MAX_RECENT_CHANGES = 10


class _Model(BaseModel):
    # Unknown keys are ignored rather than fatal: a state written by a newer version (or an LLM
    # that adds a field) must still load.
    # defer_build: schemas are built on first use, not at import (hooks and the MCP server start
    # on every Claude Code session; most runs touch only a few models).
    model_config = ConfigDict(extra="ignore", validate_assignment=False, defer_build=True)


class Meta(_Model):
    version: int = Field(0, ge=0)
    last_checkpoint: datetime | None = None
    last_access: datetime | None = None
    session_id: str
    token_budget_used: int = Field(0, ge=0)
    merged_by: str = "none"
    #: how far each transcript was handed off (key of its path -> byte offset), written with the
    #: version: a hand-off repeated after a crash between the two writes stores nothing twice
    handoffs: dict[str, int] = Field(default_factory=dict)


class RecentChange(_Model):
    timestamp: datetime
    summary: str
    files: list[str] = Field(default_factory=list)


class Decision(_Model):
    question: str
    status: Literal["pending", "decided"] = "pending"
    decision: str | None = None
    #: why it was decided (kept beside the decision: the reason is what stops it being undone)
    reason: str = ""
    #: a question the assistant asked the user: it closes as soon as the user answers
    from_assistant: bool = False


class Blocker(_Model):
    """A failing check that no later run has fixed (``mix test test/a.exs``) and its failure lines."""

    check: str
    detail: str = ""
    since: datetime | None = None
    #: written down as a blocker, not a check seen failing (shown as written)
    stated: bool = False
    #: attempts that did not fix it (commands that failed the same way, approaches stated)
    tried: list[str] = Field(default_factory=list)


NextStepOrigin = Literal["tasks", "plan", "tracker", "stated", "summary", "request"]


class NextStep(_Model):
    """One thing left to do, and where it was read: the task list, the assistant's stated plan, an
    open tracker item, a checkpoint, Claude Code's compaction summary, an unfinished request. A
    newer reading of the same origin replaces the older one's steps (a new plan replaces the old)."""

    text: str
    origin: NextStepOrigin = "stated"


class JournalEntry(_Model):
    """A checkpoint's text as written (redacted), dated: what extraction could not place is here."""

    at: datetime
    text: str
    #: where it came from: "mcp", "cli", "editor", "notebook", "/compact" ...
    origin: str = ""


class ProjectContext(_Model):
    overview: str = ""
    architecture: str = ""
    recent_changes: Annotated[list[RecentChange], Field(max_length=MAX_RECENT_CHANGES)] = Field(
        default_factory=list
    )


class ActiveContext(_Model):
    # Seed fields first; the rest extend the seed schema (older states load with the defaults).
    current_task: str = ""
    active_files: list[str] = Field(default_factory=list)
    active_decisions: list[Decision] = Field(default_factory=list)
    #: the subtask in progress (a task-list item, a claimed tracker issue)
    in_progress: str = ""
    #: what is left: pending task-list items, the assistant's plan, open tracker items, stated
    #: next steps, Claude Code's pending tasks, an unfinished earlier request
    next_steps: list[NextStep] = Field(default_factory=list)
    blockers: list[Blocker] = Field(default_factory=list)
    #: files edited since the last commit
    uncommitted_files: list[str] = Field(default_factory=list)
    #: files edited since the last passing test or build run
    unverified_files: list[str] = Field(default_factory=list)
    #: the names edits defined or changed in each active file (functions, classes, modules)
    file_symbols: dict[str, list[str]] = Field(default_factory=dict)

    #: pitfalls learned: an error and what fixed it
    gotchas: list[str] = Field(default_factory=list)
    #: the check commands this project runs (tests, linters, builds), newest first
    checks: list[str] = Field(default_factory=list)
    #: files removed or moved away lately ("old -> new"), newest first
    removed_files: list[str] = Field(default_factory=list)

    #: notes stated to keep (``Note:``, ``IMPORTANT:``, a model's notes)
    notes: list[str] = Field(default_factory=list)
    #: what the assistant was doing when the context was saved, and just before
    last_step: str = ""
    earlier_steps: list[str] = Field(default_factory=list)
    #: the git branch of the work (often names it: feature/PROJ-12-login)
    branch: str = ""
    #: a request replaced by a newer one before any sign it was finished
    earlier_request: str = ""
    #: notebook variables (name and kind, never values)
    variables: list[str] = Field(default_factory=list)
    #: when the current task was set (a completion signal since then can finish it)
    task_since: datetime | None = None
    #: titles of issue-tracker items seen lately (``bd show X``), to name a subtask claimed later
    item_titles: dict[str, str] = Field(default_factory=dict)
    #: the assistant's incremental task list (TaskCreate / TaskUpdate) by id, across hand-offs
    task_list: dict[str, TaskItem] = Field(default_factory=dict)

    @field_validator("next_steps", mode="before")
    @classmethod
    def _steps_from_text(cls, value: object) -> object:
        # States written before next steps had an origin hold plain strings.
        if isinstance(value, list):
            return [{"text": v, "origin": "stated"} if isinstance(v, str) else v for v in value]
        return value


class ProjectState(_Model):
    meta: Meta
    project_context: ProjectContext = Field(default_factory=ProjectContext)
    active_context: ActiveContext = Field(default_factory=ActiveContext)
    #: every checkpoint's text as written, oldest first (bounded: ``merge/record.py``)
    journal: list[JournalEntry] = Field(default_factory=list)
    #: Claude Code's latest compaction summary, read part by part (kept past ``/clear``)
    compact_summary: CompactSummary | None = None

    @classmethod
    def empty(cls, session_id: str) -> ProjectState:
        return cls(meta=Meta(session_id=session_id))

    def content_dict(self) -> dict[str, object]:
        """The state without bookkeeping that changes on every write (for diffs and equality)."""
        data = self.model_dump(mode="json")
        meta = data["meta"]
        for key in (
            "version",
            "last_checkpoint",
            "last_access",
            "merged_by",
            "token_budget_used",
            "handoffs",
        ):
            meta.pop(key, None)
        return data


class HistoryEntry(_Model):
    version: int = Field(ge=1)
    timestamp: datetime
    merge_duration_ms: float = 0.0
    token_count: int = 0
    merged_by: str
    state: ProjectState


# ---- results returned by ProjectBrain -------------------------------------------------------


class CheckpointResult(_Model):
    version: int
    merged_by: str
    #: False when the checkpoint changed nothing: no new version was written (``version`` is
    #: the current one)
    changed: bool = True
    duration_ms: float
    state_tokens: int
    token_cap: int
    attempts: int = 1
    #: set when an LLM refinement of this version runs in the background ("gemini:<model>")
    refining: str | None = None
    warnings: list[str] = Field(default_factory=list)


class ResumeResult(_Model):
    markdown: str
    state: ProjectState | None
    tokens: int
    warnings: list[str] = Field(default_factory=list)


class LockInfo(_Model):
    acquired: bool
    owner: str
    holder: str | None = None
    expires_at: datetime | None = None


class StatusReport(_Model):
    project_root: str
    session_id: str
    store: str
    has_state: bool
    version: int = 0
    last_checkpoint: datetime | None = None
    merged_by: str | None = None
    state_tokens: int = 0
    token_cap: int
    history_versions: list[int] = Field(default_factory=list)
    current_task: str = ""
    active_files: int = 0
    pending_decisions: int = 0
    recent_changes: int = 0
    lock_holder: str | None = None
    #: "gemini:<model>" while a background LLM refinement is running
    refining: str | None = None
    warnings: list[str] = Field(default_factory=list)
    #: working-memory budget figures (one status for both designs)
    memory: BudgetStatus | None = None
    #: which merge tiers will run, in order, and the variable each one's key came from
    merge_plan: MergePlan | None = None


class HistorySummary(_Model):
    version: int
    timestamp: datetime
    merged_by: str
    merge_duration_ms: float
    token_count: int
    current_task: str
    first_line: str
    #: what this version changed from the one before, field by field in one line
    #: ("task: X; next steps +2; journal +1"); "" when nothing changed, None when the version
    #: before is no longer kept
    changes: str | None = None


class RollbackResult(_Model):
    version: int
    restored_from: int
    merged_by: str


class FieldChange(_Model):
    path: str
    before: object = None
    after: object = None


class FieldDiff(_Model):
    """One field of the state as a person compares it (``core/changes.py``): a list by its items
    (added, removed, changed in place, reordered), a mapping by its keys, a value before and
    after. Items are shown by their text (a decision by its question, a journal entry by what
    was written)."""

    #: where it sits in the state ("active_context.next_steps")
    field: str
    #: how it is named to a reader ("next steps")
    label: str
    #: a single value: as it was and as it is ("" when empty); None for a list or a mapping
    before: str | None = None
    after: str | None = None
    added: list[str] = Field(default_factory=list)
    removed: list[str] = Field(default_factory=list)
    #: items kept under the same text whose details changed ("Use SQLite?: status pending -> decided")
    changed: list[str] = Field(default_factory=list)
    #: the same items in another order
    reordered: bool = False


class DiffResult(_Model):
    from_version: int
    to_version: int
    #: every changed leaf as stored (lists compared whole)
    changes: list[FieldChange]
    #: the same changes field by field, as a person reads them
    fields: list[FieldDiff] = Field(default_factory=list)
    #: a unified diff of the two states as JSON, for tools that want one
    unified: str


# ---- transcripts / endless mode ---------------------------------------------------------------


class Observation(_Model):
    """A short stand-in for a heavy tool result, keyed by Claude Code's ``tool_use_id``."""

    tool_use_id: str
    tool_name: str
    text: str
    original_tokens: int
    tokens: int
    is_error: bool = False
    created_at: datetime = Field(default_factory=utcnow)
    source: str = "transcript"  # "hook" when stored by the PostToolUse hook


# ---- the editor's budget figures ---------------------------------------------------------------


class BudgetReport(_Model):
    """What ``ProjectBrain.budget`` returns for a status bar refreshed on every change: the current
    version's meta, the working-memory usage and the lock holders. Unlike ``StatusReport`` it
    parses no history and checks no files, so it stays cheap however long the project runs."""

    session_id: str
    store: str
    version: int = 0
    last_checkpoint: datetime | None = None
    merged_by: str | None = None
    current_task: str = ""
    #: the brain's size as ``status`` and ``checkpoint`` report it (``integrity.state_tokens``)
    state_tokens: int = 0
    token_cap: int = 0
    memory: BudgetStatus
    lock_holder: str | None = None
    #: "gemini:<model>" while a background LLM refinement is running
    refining: str | None = None
