"""ProjectBrain: the one API every adapter (MCP, LSP, hooks, CLI, notebook) calls.

It ties a project identity to a store and a merger: ``checkpoint`` redacts the context, merges
it with the stored state and writes the next version through the store's compare-and-set;
``resume`` renders the state; ``rollback`` writes a new version equal to an old one (history
stays append-only); ``history`` and ``diff`` read the bounded history.
"""

from __future__ import annotations

import json
import logging
import os
import socket
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from .changes import field_diffs, summary_line
from .config import Settings, load_settings
from .errors import CorruptState, InvalidInput, NotFound
from .facts import ContextFacts, Stated, map_strings  # here, not lazily: checkpoint's validator reads it
from .merge_plan import merge_plan
from .models import (
    BudgetReport,
    BudgetStatus,
    CheckpointResult,
    DiffResult,
    FieldChange,
    HistoryEntry,
    HistorySummary,
    LockInfo,
    Observation,
    ProjectState,
    ResumeResult,
    RollbackResult,
    StatusReport,
    utcnow,
)
from .params import (
    HISTORY_LIMIT_DEFAULT,
    ContextText,
    FromVersion,
    HistoryLimit,
    MaxTokens,
    Steps,
    TokenCount,
    ToVersion,
    Version,
    validated,
)
from .project import Project, locate_project, resolve_project
from .storage import Store, UpdateFn, UpdateOutcome, open_store
from .tokens import count_tokens

if TYPE_CHECKING:
    from .memory.working import WorkingMemory
    from .merge.base import Merger, MergeRequest, MergeResult
# The merge code (merge.base, merge.integrity), rendering and difflib load in the methods that
# use them: the MCP server's first memory call opens the brain without them (a test guards it).

log = logging.getLogger(__name__)


def check_context_length(context: str, limit: int, name: str = "context") -> None:
    """A checkpoint's text within ``limit`` characters (the ``max_context_chars`` setting).
    ``name`` is the field or flag the text came in; a surface that parses its input (the
    notebook splits a line like a shell, in time that grows with the square of its length)
    checks it before parsing."""
    if len(context) > limit:
        raise InvalidInput(
            name,
            f"is {len(context):,} characters, over the limit of {limit:,}",
            fix="send a summary of the work instead of raw output, "
            "or raise INFINITE_CONTEXT_MAX_CONTEXT_CHARS",
        )


#: Read by people (the editor's Resume, a notebook, a terminal) and by assistants alike.
EMPTY_RESUME = (
    "# Project context\n\nNo checkpoint yet for this project. A checkpoint saves what you are "
    "working on (task, files, decisions): Checkpoint in the editor, `%checkpoint` in a notebook, "
    "`infinite-context checkpoint -m ...` in a terminal, or the `checkpoint` tool for an assistant.\n"
)


def default_owner(kind: str) -> str:
    return f"{kind}:{socket.gethostname()}:{os.getpid()}"


class ProjectBrain:
    def __init__(
        self,
        project: Project,
        store: Store,
        settings: Settings,
        merger: Merger | Callable[[], Merger] | None = None,
        clock: Callable[[], datetime] = utcnow,
    ) -> None:
        """``merger``: the merger, or a function that builds it on the first merge (a brain that
        only reads never imports the merge code); None: the offline merger."""
        self.project = project
        self.store = store
        self.settings = settings
        self._merger = merger
        self.clock = clock
        self._client_name: str | None = None
        from .storage.identity import Continuity

        #: notices a wiped or replaced store; versions continue from the highest seen (identity.py)
        self.continuity = Continuity(store.identity, store.display_url, settings.resolved_data_dir())
        #: an advisory-lock owner waiting for the project's first write (no id to lock yet)
        self._pending_claim: str | None = None

    @classmethod
    def open(
        cls,
        project_dir: Path | str | None = None,
        settings: Settings | None = None,
        client_cwd: Path | str | None = None,
    ) -> ProjectBrain:
        settings = settings or load_settings()
        # The folder: project.locate_project's one precedence order (explicit, PROJECT_ROOT,
        # CLAUDE_PROJECT_DIR, the client's cwd, this process's cwd).
        # No id file is created here: reads, doctor and an editor opening a folder leave the
        # folder as it was; the first write creates it (``_ensure_session``).
        project = resolve_project(locate_project(project_dir, settings, client_cwd), create=False)

        def chain() -> Merger:
            from .merge.chain import build_chain

            return build_chain(settings)

        return cls(project, open_store(settings), settings, merger=chain)

    @property
    def merger(self) -> Merger:
        if self._merger is None:
            from .merge.offline import OfflineMerger

            self._merger = OfflineMerger()
        elif not hasattr(self._merger, "merge"):  # the factory: build it now
            self._merger = self._merger()
        return cast("Merger", self._merger)

    @merger.setter
    def merger(self, merger: Merger) -> None:
        self._merger = merger

    @property
    def session_id(self) -> str:
        """The brain's id; "" while the project has none yet (nothing was ever written). While it
        has none, the id file is looked for again (one stat): another process may write first."""
        if not self.project.session_id:
            found = resolve_project(self.project.folder or self.project.root, create=False)
            if found.session_id:
                self.project = Project(
                    root=found.root, session_id=found.session_id, folder=self.project.folder
                )
        return self.project.session_id

    def _ensure_session(self) -> str:
        """The id, created (``.claude_session_id``) on the first write to this project's brain;
        an advisory lock claimed before that is taken now."""
        if not self.project.session_id:
            found = resolve_project(self.project.folder or self.project.root)
            self.project = Project(root=found.root, session_id=found.session_id, folder=self.project.folder)
            if self._pending_claim is not None:
                self.claim(self._pending_claim)
                self._pending_claim = None
        return self.project.session_id

    def close(self) -> None:
        self.store.close()

    def __enter__(self) -> ProjectBrain:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- checkpoint -------------------------------------------------------------------------
    def _facts(
        self, context: str | None, facts: ContextFacts | None, stated: Stated | None, origin: str
    ) -> ContextFacts:
        """The facts of one checkpoint: ``facts`` as given, the structured fields ``stated``, and
        what ``context`` text states, with the text itself (all redacted). Types and bounds are
        checked by ``checkpoint`` (core.params); here only what depends on the content and the
        settings."""
        text = context.strip() if context else ""
        if stated is not None and stated.is_empty():
            stated = None
        if not text and stated is None and (facts is None or facts.is_empty()):
            raise InvalidInput(
                "context",
                "is empty",
                fix="pass what you worked on: task, next steps, decisions, what is done (text or fields)",
            )
        if context is not None:
            check_context_length(context, self.settings.max_context_chars)

        from .merge.extract import facts_from_text, project_files
        from .redact import redact

        found = map_strings(facts, redact) if facts is not None else ContextFacts(source="text")
        if stated is not None:
            clean = Stated.model_validate(map_strings(ContextFacts(stated=stated), redact).stated)
            clean.files = project_files(clean.files, self.project.root)
            found = found.combined(ContextFacts(source=found.source, stated=clean))
        if text:
            found = found.combined(facts_from_text(redact(text), self.project.root))
        found.origin = origin or found.origin
        return found

    @validated
    def checkpoint(
        self,
        context: ContextText | None = None,
        token_count: TokenCount | None = None,
        *,
        facts: ContextFacts | None = None,
        stated: Stated | None = None,
        origin: str = "",
        wait: bool = False,
    ) -> CheckpointResult:
        """Merge what happened into the brain and store the next version.

        ``context`` is free text (labelled lines or prose: kept as written in the journal, and read
        into facts), ``stated`` the structured fields a model sends (merged as given,
        ``merge/stated.py``), ``facts`` structured facts (the transcript digest, the notebook
        recorder); any of them. ``origin`` names the surface for the journal ("mcp", "cli"...).
        The offline merge is stored at once; with LLM tiers configured, a detached refiner replaces
        it in the background, unless ``wait`` asks for the LLM merge before returning (the CLI's
        ``--wait``). A checkpoint that changes nothing writes no version (``changed`` is False).
        """
        merged = self._facts(context, facts, stated, origin)
        self._ensure_session()
        if not self.merger.uses_network:
            return self._merge_in_transaction(merged, token_count, self.merger)
        from .merge.offline import OfflineMerger

        if not wait:
            stored = self._merge_in_transaction(merged, token_count, OfflineMerger())
            if not stored.changed:
                return stored
            from .refine import spawn_refinement

            spawn_refinement(self, stored.version, merged, token_count)
            stored.refining = self.merger.label
            return stored
        result = self._merge_outside_transaction(merged, token_count, base_version=None)
        # Every LLM attempt lost the race: the offline merge inside the transaction cannot lose.
        return (
            result if result is not None else self._merge_in_transaction(merged, token_count, OfflineMerger())
        )

    def _request(
        self, old: ProjectState | None, facts: ContextFacts, token_count: int | None
    ) -> MergeRequest:
        from .merge.base import MergeRequest

        return MergeRequest(
            old=old,
            facts=facts,
            session_id=self.session_id,
            project_root=self.project.root,
            token_cap=self.settings.state_token_cap,
            now=self.clock(),
            token_count=token_count,
        )

    def _finished(
        self, merged: MergeResult, request: MergeRequest, facts: ContextFacts
    ) -> tuple[ProjectState, list[str]]:
        """A tier's merge with what every tier keeps (journal, Claude Code's summary, the cap)."""
        from .merge.record import finish

        state, trimmed = finish(merged.state, request.old, facts, request.now, request.token_cap)
        return state, [*merged.warnings, *trimmed]

    def _merge_in_transaction(
        self, facts: ContextFacts, token_count: int | None, merger: Merger
    ) -> CheckpointResult:
        """Merge inside the store's compare-and-set (re-run on the fresh state on conflict).
        Only for quick mergers: the store's last attempt holds its write lock."""
        warnings: list[str] = []
        durations: list[float] = []

        def update(current: ProjectState | None, next_version: int) -> HistoryEntry:
            done = facts.handoff
            if (
                done is not None
                and current is not None
                and current.meta.handoffs.get(done.key, -1) >= done.offset
            ):
                raise _Unchanged(current)  # this stretch was handed off already (a repeat after a crash)
            request = self._request(current, facts, token_count)

            result = merger.merge(request)
            state, found = self._finished(result, request, facts)
            if current is not None and state.content_dict() == current.content_dict():
                raise _Unchanged(current)
            warnings[:] = found
            durations.append(result.duration_ms)
            return self._entry(state, next_version, request.now, result.merged_by, result.duration_ms)

        try:
            outcome = self._write(update)
        except _Unchanged as same:
            return self._unchanged(same.state)
        return self._result(outcome.entry, warnings, sum(durations), outcome.attempts)

    def _unchanged(self, current: ProjectState) -> CheckpointResult:
        from .merge.integrity import state_tokens

        return CheckpointResult(
            version=current.meta.version,
            merged_by=current.meta.merged_by,
            changed=False,
            duration_ms=0.0,
            state_tokens=state_tokens(current),
            token_cap=self.settings.state_token_cap,
            warnings=[f"nothing new: version {current.meta.version} already holds all of it"],
        )

    def _write(self, fn: UpdateFn, *, repair: bool = False, floor: int | None = None) -> UpdateOutcome:
        """``store.update_state`` above the highest version this machine has seen (identity.py)."""
        sid = self.session_id
        if floor is None:
            floor = self.continuity.floor(sid, lambda: self.store.states.current_version(sid))
        outcome = self.store.states.update_state(sid, fn, repair=repair, floor=floor)
        self.continuity.seen(sid, outcome.entry.version)
        return outcome

    def _merge_outside_transaction(
        self,
        facts: ContextFacts,
        token_count: int | None,
        *,
        base_version: int | None,
        only_llm: bool = False,
    ) -> CheckpointResult | None:
        """Slow (LLM) merge against a snapshot, committed only if nobody wrote meanwhile;
        re-merged on the fresh state otherwise (bounded). None when every attempt lost the race,
        or (``only_llm``) when no LLM tier produced the state."""
        for attempt in range(1, self.settings.llm_rebase_attempts + 1):
            version = self.store.states.current_version(self.session_id)
            floor = self.continuity.floor(
                self.session_id, lambda: self.store.states.current_version(self.session_id)
            )
            current = self.store.states.get_state(self.session_id)
            old = current
            if base_version is not None and version == base_version:
                # Refining the offline merge of this very context: start from the version before
                # it (none before a first checkpoint: the old state must not already hold the facts).
                previous = (
                    self.store.states.history_entry(self.session_id, base_version - 1)
                    if base_version > 1
                    else None
                )
                old = previous.state if previous is not None else None
            request = self._request(old, facts, token_count)
            result = self.merger.merge(request)
            if only_llm and result.merged_by == "offline":
                return None
            finished, found = self._finished(result, request, facts)

            def commit(
                fresh: ProjectState | None,
                next_version: int,
                expect: int = floor,
                merged: MergeResult = result,
                state: ProjectState = finished,
                when: datetime = request.now,
            ) -> HistoryEntry:
                if next_version - 1 != expect:
                    raise _StateMoved
                state = state.model_copy(deep=True)
                state.meta.session_id = self.session_id
                return self._entry(state, next_version, when, merged.merged_by, merged.duration_ms)

            try:
                outcome = self._write(commit, floor=floor)
            except _StateMoved:
                log.info(
                    "state moved during the merge; merging again on the fresh state",
                    extra={"attempt": attempt},
                )
                continue
            return self._result(outcome.entry, found, result.duration_ms, attempt)
        return None

    def refine(
        self, facts: ContextFacts, base_version: int, token_count: int | None = None
    ) -> CheckpointResult | None:
        """Replace the offline merge stored as ``base_version`` with the LLM chain's merge (run by
        the detached refiner process). None if no LLM tier succeeded."""
        owner = f"refine:{self.merger.label}:{default_owner('p')}"
        self.store.states.acquire_lock(
            refine_lock_id(self.session_id), owner, self.settings.merge_timeout_seconds * 4
        )
        try:
            return self._merge_outside_transaction(
                facts, token_count, base_version=base_version, only_llm=True
            )
        finally:
            self.store.states.release_lock(refine_lock_id(self.session_id), owner)

    def _result(
        self, entry: HistoryEntry, warnings: list[str], duration_ms: float, attempts: int
    ) -> CheckpointResult:
        from .merge.integrity import state_tokens

        warnings = [*self.continuity.warnings, *warnings]
        for warning in warnings:
            log.warning(warning, extra={"session_id": self.session_id})
        return CheckpointResult(
            version=entry.version,
            merged_by=entry.merged_by,
            duration_ms=round(duration_ms, 3),
            state_tokens=state_tokens(entry.state),
            token_cap=self.settings.state_token_cap,
            attempts=attempts,
            warnings=warnings,
        )

    @staticmethod
    def _entry(
        state: ProjectState, version: int, now: datetime, merged_by: str, duration_ms: float
    ) -> HistoryEntry:
        state = state.model_copy(deep=True)
        state.meta.version = version
        state.meta.merged_by = merged_by
        return HistoryEntry(
            version=version,
            timestamp=now,
            merge_duration_ms=round(duration_ms, 3),
            token_count=state.meta.token_budget_used,
            merged_by=merged_by,
            state=state,
        )

    # ---- reading ----------------------------------------------------------------------------
    def _state_and_missing(self) -> tuple[ProjectState | None, list[str], list[str]]:
        """(state, active files not on disk now, warnings). Missing files stay in the state and
        are marked, not dropped: a file deleted on purpose or absent from this checkout is still
        part of what was worked on."""
        state = self.store.states.get_state(self.session_id)
        version = state.meta.version if state is not None else 0
        # a wiped store is reported on reads too (the version read again, after the record)
        self.continuity.floor(self.session_id, lambda: self.store.states.current_version(self.session_id))
        self.continuity.seen(self.session_id, version)
        noticed = list(self.continuity.warnings)
        if state is None:
            return None, [], noticed
        from .merge.integrity import existing_files

        _kept, missing = existing_files(state.active_context.active_files, self.project.root)
        if not missing:
            return state, [], noticed
        shown = ", ".join(missing[:10]) + (f" and {len(missing) - 10} more" if len(missing) > 10 else "")
        return (
            state,
            missing,
            [*noticed, f"{len(missing)} active files are not on disk in {self.project.root}: {shown}"],
        )

    @validated
    def resume(self, max_tokens: MaxTokens | None = None) -> ResumeResult:
        state, missing, warnings = self._state_and_missing()
        from .render import render_within

        budget = self.settings.resume_tokens if max_tokens is None else max_tokens
        markdown = EMPTY_RESUME if state is None else render_within(state, budget, missing=set(missing))
        return ResumeResult(markdown=markdown, state=state, tokens=count_tokens(markdown), warnings=warnings)

    def status(self) -> StatusReport:
        state, _missing, warnings = self._state_and_missing()
        history = self.store.states.history(self.session_id)
        report = StatusReport(
            project_root=str(self.project.root),
            session_id=self.session_id,
            store=self.store.display_url,
            has_state=state is not None,
            token_cap=self.settings.state_token_cap,
            history_versions=sorted(e.version for e in history),
            lock_holder=self.store.states.lock_holder(self.session_id),
            refining=_refining_label(self.store.states.lock_holder(refine_lock_id(self.session_id))),
            warnings=warnings,
            memory=self._memory_status(),
            merge_plan=merge_plan(self.settings),
        )
        if state is not None:
            from .merge.integrity import state_tokens

            ac = state.active_context
            report.version = state.meta.version
            report.last_checkpoint = state.meta.last_checkpoint
            report.merged_by = state.meta.merged_by
            report.state_tokens = state_tokens(state)
            report.current_task = ac.current_task
            report.active_files = len(ac.active_files)
            report.pending_decisions = sum(d.status == "pending" for d in ac.active_decisions)
            report.recent_changes = len(state.project_context.recent_changes)
        return report

    def budget(self) -> BudgetReport:
        """The cheap part of ``status`` for a status bar refreshed on every change: the current
        version, working-memory usage and lock holders. No history parse, no file checks."""
        state = self.store.states.get_state(self.session_id)
        report = BudgetReport(
            session_id=self.session_id,
            store=self.store.display_url,
            token_cap=self.settings.state_token_cap,
            memory=self._memory_status(),
            lock_holder=self.store.states.lock_holder(self.session_id),
            refining=_refining_label(self.store.states.lock_holder(refine_lock_id(self.session_id))),
        )
        if state is not None:
            report.version = state.meta.version
            report.last_checkpoint = state.meta.last_checkpoint
            report.merged_by = state.meta.merged_by
            report.current_task = state.active_context.current_task
            from .merge.integrity import state_tokens

            report.state_tokens = state_tokens(state)
        return report

    def memory(self, client_name: str | None = None) -> WorkingMemory:
        """This project's working memory (budget detected from ``client_name`` if given). Its
        first write creates the project's id file if it has none yet; reads never do."""
        from .memory.working import WorkingMemory

        if client_name is not None:
            self._client_name = client_name
        return WorkingMemory(
            self.store.memory,
            self.session_id,
            self.settings,
            self._client_name,
            create_session=self._ensure_session,
            store_replaced=self.continuity.store_replaced,
        )

    def observe(self, payload: dict[str, Any]) -> Observation:
        """Store the observation of one tool use from Claude Code's PostToolUse payload
        (``tool_use_id, tool_name, tool_input, tool_response``); a write: the project's id file
        is created if it has none yet."""
        from .transcript.record import observation_from_payload

        obs = observation_from_payload(payload, self.settings.observation_max_tokens)
        self.store.observations.put_observation(self._ensure_session(), obs)
        return obs

    def missing_observations(self, tool_use_ids: list[str]) -> list[str]:
        """Those of ``tool_use_ids`` this project holds no observation for, in order."""
        if not tool_use_ids or not self.session_id:
            return list(tool_use_ids)
        held = self.store.observations.get_observations(self.session_id, tool_use_ids)
        return [i for i in tool_use_ids if i not in held]

    def add_observations(self, observations: list[Observation]) -> None:
        """Store ``observations`` (a write: the project's id file is created if it has none)."""
        if observations:
            self.store.observations.put_observations(self._ensure_session(), observations)

    def _memory_status(self) -> BudgetStatus:
        """Working-memory figures for status / budget, read without creating anything."""
        from .memory.working import WorkingMemory

        memory = WorkingMemory(self.store.memory, self.session_id, self.settings, self._client_name)
        return memory.budget_status()

    @validated
    def history(self, limit: HistoryLimit = HISTORY_LIMIT_DEFAULT) -> list[HistorySummary]:
        """The newest ``limit`` versions, each with what it changed from the version before (one
        more entry is read for the oldest one's predecessor)."""
        entries = self.store.states.history(self.session_id, limit + 1)
        return [
            _summary(entry, entries[n + 1] if n + 1 < len(entries) else None)
            for n, entry in enumerate(entries[:limit])
        ]

    def _entry_or_error(self, version: int) -> HistoryEntry:
        entry = self.store.states.history_entry(self.session_id, version)
        if entry is None:
            kept = sorted(e.version for e in self.store.states.history(self.session_id))
            raise NotFound(
                f"version {version} is not in the history of this project (kept: {kept or 'none'})",
                fix=f"pick one of {kept}" if kept else "make a checkpoint first",
            )
        return entry

    # ---- rollback / diff --------------------------------------------------------------------
    @validated
    def rollback(self, steps: Steps | None = None, version: Version | None = None) -> RollbackResult:
        if steps is not None and version is not None:
            raise InvalidInput("steps", "give either steps or version, not both", fix="drop one of them")
        if steps is None and version is None:
            version = self._newest_intact_if_unreadable()
        if version is None:
            steps = 1 if steps is None else steps
            current = self.store.states.current_version(self.session_id)
            if current == 0:
                raise NotFound("there is nothing to roll back yet", fix="make a checkpoint first")
            version = current - steps
            if version < 1:
                raise InvalidInput(
                    "steps",
                    f"goes back past version 1 (current is {current})",
                    fix=f"pass at most {current - 1}",
                )
        target = self._entry_or_error(version)

        def update(_current: ProjectState | None, next_version: int) -> HistoryEntry:
            # The restored content is a new version written now: its time is now, everywhere
            # (status, the resume header and the history row agree).
            now = self.clock()
            restored = target.state.model_copy(deep=True)
            restored.meta.last_checkpoint = now
            return self._entry(restored, next_version, now, f"rollback:v{target.version}", 0.0)

        entry = self._write(update, repair=True).entry
        return RollbackResult(version=entry.version, restored_from=target.version, merged_by=entry.merged_by)

    def _newest_intact_if_unreadable(self) -> int | None:
        """The newest intact version in history when the current state cannot be read (a plain
        ``rollback`` then restores it, not the one before it); None when the state reads fine."""
        try:
            self.store.states.get_state(self.session_id)
        except CorruptState:
            kept = self.store.states.history(self.session_id)  # newest first, unreadable rows skipped
            if not kept:
                raise CorruptState(
                    "the stored state is unreadable and no intact version is left in history",
                    fix="start again with a checkpoint (`infinite-context checkpoint -m ...`)",
                ) from None
            return kept[0].version
        return None

    @validated
    def diff(self, from_version: FromVersion, to_version: ToVersion) -> DiffResult:
        before = self._entry_or_error(from_version).state.content_dict()
        after = self._entry_or_error(to_version).state.content_dict()
        changes = [FieldChange(path=p, before=b, after=a) for p, b, a in _changed_fields(before, after)]
        fields = field_diffs(before, after)
        import difflib

        unified = "".join(
            difflib.unified_diff(
                json.dumps(before, indent=2, sort_keys=True).splitlines(keepends=True),
                json.dumps(after, indent=2, sort_keys=True).splitlines(keepends=True),
                fromfile=f"v{from_version}",
                tofile=f"v{to_version}",
            )
        )
        return DiffResult(
            from_version=from_version, to_version=to_version, changes=changes, fields=fields, unified=unified
        )

    @validated
    def version_markdown(self, version: Version) -> ResumeResult:
        """Version ``version`` from history rendered as the resume Markdown (whole, no budget),
        so an editor can show it or diff two versions as a reader sees them, not as JSON."""
        from .render import render_within

        state = self._entry_or_error(version).state
        markdown = render_within(state, None)
        return ResumeResult(markdown=markdown, state=state, tokens=count_tokens(markdown))

    # ---- advisory lock ----------------------------------------------------------------------
    def claim(self, owner: str) -> LockInfo:
        if not self.session_id:  # nothing to hold yet: taken at the first write
            self._pending_claim = owner
            return LockInfo(acquired=True, owner=owner)
        info = self.store.states.acquire_lock(self.session_id, owner, self.settings.lock_ttl_seconds)
        if not info.acquired:
            log.warning(
                "this project brain is also in use by another process; writes stay safe (compare-and-set)",
                extra={"holder": info.holder, "session_id": self.session_id},
            )
        return info

    def release(self, owner: str) -> None:
        if self._pending_claim == owner:
            self._pending_claim = None
        if self.session_id:
            self.store.states.release_lock(self.session_id, owner)


class _StateMoved(Exception):
    """Raised inside a commit when another writer stored a version during a slow merge."""


class _Unchanged(Exception):
    """Raised inside an update when the merge would store the current state again."""

    def __init__(self, state: ProjectState) -> None:
        super().__init__("unchanged")
        self.state = state


def refine_lock_id(session_id: str) -> str:
    return f"{session_id}:refine"


def _refining_label(holder: str | None) -> str | None:
    # holder = "refine:<tier>:<model>:p:<host>:<pid>" -> "<tier>:<model>"
    if not holder or not holder.startswith("refine:"):
        return None
    parts = holder.split(":")
    return ":".join(parts[1:3])


def _summary(entry: HistoryEntry, previous: HistoryEntry | None) -> HistorySummary:
    """One history row; ``previous`` is the entry listed after it (None: none is left)."""
    state = entry.state
    if previous is not None and previous.version == entry.version - 1:
        changes: str | None = summary_line(field_diffs(previous.state.content_dict(), state.content_dict()))
    elif entry.version == 1:  # the first version: everything in it is new
        empty = ProjectState.empty(state.meta.session_id)
        changes = summary_line(field_diffs(empty.content_dict(), state.content_dict()))
    else:
        changes = None  # the version before is no longer kept (or unreadable)
    first = state.active_context.current_task or (
        state.project_context.recent_changes[-1].summary if state.project_context.recent_changes else ""
    )
    return HistorySummary(
        version=entry.version,
        timestamp=entry.timestamp,
        merged_by=entry.merged_by,
        merge_duration_ms=entry.merge_duration_ms,
        token_count=entry.token_count,
        current_task=state.active_context.current_task,
        first_line=first.splitlines()[0][:120] if first else "",
        changes=changes,
    )


def _changed_fields(before: object, after: object, path: str = "") -> list[tuple[str, object, object]]:
    if isinstance(before, dict) and isinstance(after, dict):
        out: list[tuple[str, object, object]] = []
        for key in sorted(set(before) | set(after)):
            out += _changed_fields(before.get(key), after.get(key), f"{path}.{key}" if path else str(key))
        return out
    return [] if before == after else [(path, before, after)]
