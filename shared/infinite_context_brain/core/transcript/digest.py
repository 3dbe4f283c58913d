"""Context facts read from a stretch of a Claude Code transcript, the way an engineer would.

What counts: the user's requests (Claude Code's injected markup filtered, "continue" is not a
request), the task list (TodoWrite, TaskCreate / TaskUpdate), issue-tracker commands, the files
edited (Edit / Write / MultiEdit / NotebookEdit that succeeded) and read, shell commands with
their outcome, failing checks until a later run passes, commits, the assistant's turn-ending
replies and its latest narration, questions it asked and whether the user answered, answers to
AskUserQuestion. Tool outputs never enter the facts beyond a few failure lines.

Paths are made project-relative from each entry's own ``cwd`` (a ``cd`` mid-session changes it).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

import orjson

from ..facts import CommandRun, ContextFacts, DecisionFact, Failure, Gotcha, QuestionFact, TaskItem
from ..merge.clauses import content_free
from ..redact import redact
from .commands import (
    JOIN,
    classify,
    commit_of,
    concluded_by_commit,
    failure_lines,
    file_changes,
    outcome,
    parts,
    tracker_events,
    unsettled,
)
from .leftover import approved_plan, decisions_in, hook_rule, plan_in, tracker_listing
from .markup import compact_instructions, is_acknowledgement, strip_markup, user_text
from .reader import (
    RECENT_REPLIES,
    AssistantEntry,
    Entry,
    SystemEntry,
    ToolResult,
    ToolUse,
    TranscriptReader,
    UserEntry,
)
from .summary import read_summary
from .symbols import MAX_SYMBOLS, edited_symbols
from .trackers import read_tracker_call
from .user_words import asks_only, is_rejection, rejection_words, rules_and_later

EDIT_TOOLS = {"Edit", "Write", "MultiEdit", "NotebookEdit"}
REQUEST_CHARS = 600
CONCLUSION_CHARS = 700
STEP_CHARS = 500
EARLIER_STEPS = 2
COMMAND_CHARS = 160
MAX_DECISIONS = 6
#: the stretch's own words an LLM merger reads (newest kept): a few pages
EXCERPT_CHARS = 16_000
EXCERPT_ITEM_CHARS = 1_500
#: how much of the assistant's words about a fix a gotcha keeps
FIX_CHARS = 220


#: a passing run of one of these settles the "edited since the last test or build" files
VERIFYING = frozenset({"test", "build", "typecheck"})

_TASK_STATUSES = {"pending", "in_progress", "completed"}
_TASK_CREATED = re.compile(r"Task #?(\w+) created", re.I)
#: ``bd dep add A B``: A waits for B
_DEPENDS = re.compile(r"\b(?:bd|br|beads)\s+dep(?:endency)?\s+add\s+([\w.-]+)\s+([\w.-]+)")


def clip(text: str, limit: int) -> str:
    """One line of at most ``limit`` characters, cut at a word boundary. Redacted first: a secret
    cut in half would no longer match its pattern."""
    flat = " ".join(redact(text).split())
    if len(flat) <= limit:
        return flat
    cut = flat[: limit - 1].rsplit(" ", 1)[0]
    return cut.rstrip(",;:") + "…"


def project_path(raw: str, cwd: str, roots: Iterable[Path]) -> str:
    """``raw`` relative to the first root that holds it (absolute POSIX path otherwise)."""
    path = PurePosixPath(raw)
    if not path.is_absolute() and cwd:
        path = PurePosixPath(cwd) / path
    path = PurePosixPath(os.path.normpath(str(path)))
    if not path.is_absolute():
        return path.as_posix()
    for root in roots:
        try:
            return path.relative_to(PurePosixPath(root)).as_posix()
        except ValueError:
            continue
    return path.as_posix()


def _add(items: list[str], value: str) -> None:
    if value in items:
        items.remove(value)  # keep the most recent position
    items.append(value)


_FAMILY_PREFIX = re.compile(r"^\s*(?:cd\s+\S+\s*&&\s*)?(?:\w+=\S*\s+)*")


def _family(command: str) -> str:
    """The kind of a shell command, by its program and sub-command ("git add", "npm install"):
    a later run of the same kind with other arguments that works is the fix of a failed one."""
    words = _FAMILY_PREFIX.sub("", command.split("\n", 1)[0]).split()
    if not words:
        return ""
    second = words[1] if len(words) > 1 and re.fullmatch(r"[a-z][\w-]*", words[1]) else ""
    return f"{words[0]} {second}".strip()


def _last_question(text: str) -> str | None:
    """The last sentence of a reply that asks the user something."""
    if "?" not in text:
        return None
    # a line break ends a sentence too: a reply's table or list is no part of its question
    sentences = re.split(r"(?<=[.!?])\s+|\s*\n\s*", text.strip())
    asked = [s for s in sentences if s.rstrip().endswith("?") and not s.lstrip().startswith("|")]
    return clip(asked[-1], 300) if asked else None


@dataclass
class _Walk:
    roots: list[Path]
    cwd: str = ""
    facts: ContextFacts = field(default_factory=lambda: ContextFacts(source="transcript"))
    uses: dict[str, tuple[ToolUse, str, int | None]] = field(default_factory=dict)
    failing: dict[str, Failure] = field(default_factory=dict)
    todo: list[TaskItem] | None = None
    task_items: dict[str, TaskItem] = field(default_factory=dict)
    since_commit: list[str] = field(default_factory=list)
    #: files edited since the last passing test, build or type check
    since_verified: list[str] = field(default_factory=list)
    #: the last failed run of each kind of command ("git add"): a later different run that works
    #: is the fix (a gotcha)
    failed_runs: dict[str, tuple[str, str]] = field(default_factory=dict)
    #: files edited since each failing check last failed (what was tried against it)
    edits_since_failure: dict[str, list[str]] = field(default_factory=dict)
    #: the assistant's narrations, and where each failing check's last failure falls among them
    narrations: list[str] = field(default_factory=list)
    failed_at: dict[str, int] = field(default_factory=dict)
    #: where the last check run falls among the narrations (what came after it led to the next)
    last_check_at: int = 0

    open_question: QuestionFact | None = None
    # A reply's content blocks are written as separate lines that the reader folds into one
    # entry, sometimes after the entry was yielded (text first, its tool call a line later, or
    # parallel calls interleaved with results): blocks are taken as they appear, not once.
    recent: list[AssistantEntry] = field(default_factory=list)
    seen_uses: set[str] = field(default_factory=set)
    seen_texts: dict[int, int] = field(default_factory=dict)
    #: the latest reply: it ends the turn if the user speaks next and it called no tool
    last_reply: AssistantEntry | None = None
    #: the stretch in its own words, oldest first (``ContextFacts.excerpt``)
    excerpt: list[str] = field(default_factory=list)
    #: Claude Code's plan mode was entered and no plan approved yet; the session's name
    plan_mode: bool = False
    slug: str = ""

    def path(self, raw: str, cwd: str) -> str:
        return project_path(raw, cwd, self.roots)

    # ---- assistant turns ----------------------------------------------------------------------
    def assistant(self, entry: AssistantEntry) -> None:
        self.cwd = entry.cwd or self.cwd
        self.slug = entry.slug or self.slug
        self.facts.branch = entry.git_branch or self.facts.branch
        if not any(known is entry for known in self.recent):
            if len(self.recent) >= RECENT_REPLIES:
                self.seen_texts.pop(id(self.recent.pop(0)), None)
            self.recent.append(entry)
        self.catch_up()
        self.last_reply = entry

    def catch_up(self) -> None:
        """Take the blocks that joined recent replies since they were last looked at."""
        for entry in self.recent:
            for use in entry.tool_uses:
                if use.id not in self.seen_uses:
                    self.seen_uses.add(use.id)
                    self.facts.tool_uses += 1
                    self.tool_use(use)
            seen = self.seen_texts.get(id(entry), 0)
            if len(entry.texts) > seen:
                self.seen_texts[id(entry)] = len(entry.texts)
                self.narration(entry.texts[seen:])

    def narration(self, texts: list[str]) -> None:
        raw = "\n".join(t.strip() for t in texts if t.strip())
        text = strip_markup(" ".join(t.strip() for t in texts if t.strip()))
        if not text:
            return
        plan = plan_in(raw)
        if plan is not None:
            self.facts.plan = plan
            self.facts.settled = [s for s in self.facts.settled if s != "plan"]

        for decision in decisions_in(strip_markup(raw)):
            if all(d.decision != decision for d in self.facts.decisions):
                self.facts.decisions = [*self.facts.decisions, DecisionFact(decision=decision)][
                    -MAX_DECISIONS:
                ]
        self.excerpt.append("Assistant: " + clip(text, EXCERPT_ITEM_CHARS))
        self.narrations.append(clip(text, FIX_CHARS))
        step = clip(text, STEP_CHARS)
        if self.facts.last_step and self.facts.last_step != step:
            self.facts.earlier_steps = [*self.facts.earlier_steps, self.facts.last_step][-EARLIER_STEPS:]
        self.facts.last_step = step

    def end_of_turn(self) -> None:
        """The latest reply called no tool and the user (or the window's end) comes next: it is
        the turn's conclusion, and its last question is open until the user answers."""
        reply, self.last_reply = self.last_reply, None
        if reply is None or reply.tool_uses:
            return
        text = strip_markup(" ".join(t.strip() for t in reply.texts if t.strip()))
        if not text:
            return
        self.facts.conclusions.append(clip(text, CONCLUSION_CHARS))
        asked = _last_question(text)
        if asked:
            self.open_question = QuestionFact(text=asked, from_assistant=True)
            self.facts.questions.append(self.open_question)

    def tool_use(self, use: ToolUse) -> None:
        data = use.input
        index: int | None = None
        if use.name == "Bash" and isinstance(data.get("command"), str):
            command = str(data["command"])
            kind, check = classify(command)
            self.facts.commands.append(
                CommandRun(command=clip(command, COMMAND_CHARS), kind=kind, check=check)
            )
            index = len(self.facts.commands) - 1
        elif use.name == "Read" and isinstance(data.get("file_path"), str):
            read = self.path(str(data["file_path"]), self.cwd)
            if not read.startswith("/"):  # reading a temp or system file says little of the work
                _add(self.facts.files_read, read)
        elif use.name == "TodoWrite" and isinstance(data.get("todos"), list):
            # Every field is checked before use: one malformed item is skipped, never fatal.
            self.todo = [
                TaskItem(content=clip(t["content"], 200), status=t["status"])
                for t in data["todos"]
                if isinstance(t, dict)
                and isinstance(t.get("content"), str)
                and t["content"].strip()
                and isinstance(t.get("status"), str)
                and t["status"] in _TASK_STATUSES
            ]
        elif use.name == "TaskUpdate":
            self.task_update(data)
        elif use.name == "EnterPlanMode":
            self.plan_mode = True
        elif use.name == "ExitPlanMode" and isinstance(data.get("plan"), str):
            self.plan_mode = False
            steps = approved_plan(str(data["plan"]))
            if steps:
                self.facts.plan = steps
                self.facts.settled = [s for s in self.facts.settled if s != "plan"]

        elif use.name in {"Task", "Agent"} and isinstance(data.get("description"), str):
            agent = str(data.get("subagent_type") or "subagent")
            self.facts.commands.append(
                CommandRun(command=clip(f"{agent} agent: {data['description']}", COMMAND_CHARS), kind="run")
            )
        self.uses[use.id] = (use, self.cwd, index)

    def task_update(self, data: dict[str, Any]) -> None:
        raw_key = data.get("taskId")
        if not isinstance(raw_key, str | int) or isinstance(raw_key, bool):
            return  # no usable id: nothing to update
        key = str(raw_key)
        item = self.task_items.get(key)
        if item is None:  # created before this stretch: its subject is the one stored then
            item = self.task_items[key] = TaskItem(id=key, content="")
        if isinstance(data.get("subject"), str) and data["subject"].strip():
            item.content = clip(str(data["subject"]), 200)
        status = data.get("status")
        if status == "deleted":
            self.task_items.pop(key, None)
            self.facts.tasks_deleted.append(key)
        elif isinstance(status, str) and status in _TASK_STATUSES:
            item.status = status  # type: ignore[assignment]  # checked against the statuses above

    # ---- user turns ---------------------------------------------------------------------------
    def user(self, entry: UserEntry) -> None:
        self.cwd = entry.cwd or self.cwd
        self.facts.branch = entry.git_branch or self.facts.branch
        self.catch_up()
        if entry.tool_results:
            self.last_reply = None  # the turn goes on
        if entry.is_compact_summary:
            for raw in entry.texts:
                summary = read_summary(raw, entry.timestamp)
                if summary is not None:
                    self.facts.compact_summary = summary
                    rules = [
                        DecisionFact(decision=r, question="the user's instruction")
                        for r in summary.user_rules
                    ]
                    self.facts.decisions = [*self.facts.decisions, *rules][-MAX_DECISIONS * 2 :]
                    self.facts.settled = [s for s in self.facts.settled if s != "summary"]
        elif not entry.is_meta:
            for raw in entry.texts:
                focus = compact_instructions(raw)
                if focus:
                    self.facts.compact_focus = clip(focus, REQUEST_CHARS)
                text = user_text(raw)
                if text:
                    self.end_of_turn()
                    self.said(text)
        else:  # Claude Code's own turns: a blocking hook's feedback is a rule of the set-up
            for raw in entry.texts:
                rule = hook_rule(raw)
                if rule and all(g.text != rule for g in self.facts.gotchas):
                    self.facts.gotchas.append(Gotcha(text=rule))
        for result in entry.tool_results:
            feedback = rejection_words(result.text()) if result.is_error else ""
            if feedback:
                self.said(feedback)  # a rejected tool call with the user's words
            known = self.uses.pop(result.tool_use_id, None)
            if known is not None:
                self.tool_result(*known, result)

    def said(self, text: str) -> None:
        """The person's own words: a reply to an open question, a request unless it only steers;
        a constraint they set ("use British spelling", "never store email in localStorage") is a
        decision, work they put off ("a proper /auth/me endpoint in future") a next step."""
        self.facts.user_replied = True
        if self.open_question is not None:
            self.open_question.answer = clip(text, 200)
            self.open_question = None
        request = clip(text, REQUEST_CHARS)
        self.excerpt.append("User: " + clip(text, EXCERPT_ITEM_CHARS))
        steering = is_acknowledgement(text) or content_free(text) or asks_only(text)

        if not steering and self.facts.requests[-1:] != [request]:
            self.facts.requests.append(request)
        rules, later = rules_and_later(text)
        for rule in rules:
            decision = DecisionFact(decision=clip(rule, 300), question="the user's instruction")
            self.facts.decisions = [*self.facts.decisions, decision][-MAX_DECISIONS:]
        if later:
            self.facts.next_steps = [*self.facts.next_steps, *(clip(s, 300) for s in later)][-MAX_DECISIONS:]

    def tool_result(self, use: ToolUse, cwd: str, index: int | None, result: ToolResult) -> None:
        data = use.input
        if result.is_error and is_rejection(result.text()):
            what = data.get("command") if use.name == "Bash" else data.get("file_path") or data.get("pattern")
            shown = f"{use.name} `{clip(what, 120)}`" if isinstance(what, str) else use.name
            decision = DecisionFact(decision=f"the user rejected {shown}", question="the user's instruction")
            self.facts.decisions = [*self.facts.decisions, decision][-MAX_DECISIONS:]
            return

        if use.name.startswith("mcp__") and not result.is_error:
            reading = read_tracker_call(use.name, data, result.text())
            if reading is not None:
                self.facts.tracker += reading.events
                if reading.open_items is not None:
                    self.facts.open_items = reading.open_items
                new_items = [f"{item} (created on the tracker)" for item in reading.created]
                self.facts.next_steps = [*self.facts.next_steps, *new_items]

                return
        if use.name in EDIT_TOOLS:
            raw = data.get("file_path") or data.get("notebook_path")
            if isinstance(raw, str) and not result.is_error:
                path = self.path(raw, cwd)
                self.edited(path)
                names = edited_symbols(use.name, data)
                if names:
                    known = self.facts.edited_symbols.pop(path, [])
                    merged = [n for n in known if n not in names] + names
                    self.facts.edited_symbols[path] = merged[-MAX_SYMBOLS:]
            return
        if use.name == "TaskCreate":
            created = _TASK_CREATED.search(result.text())
            key = created.group(1) if created else str(len(self.task_items) + 1)
            subject = data.get("subject") if isinstance(data.get("subject"), str) else data.get("description")
            if isinstance(subject, str) and subject.strip() and not result.is_error:
                self.task_items[key] = TaskItem(id=key, content=clip(subject, 200))
            return
        if use.name == "AskUserQuestion" and isinstance(result.extra, dict):
            answers = result.extra.get("answers")
            if isinstance(answers, dict):
                for question, answer in answers.items():
                    self.facts.decisions.append(
                        DecisionFact(question=clip(str(question), 200), decision=clip(str(answer), 300))
                    )
            return
        if index is not None:
            self.command_result(self.facts.commands[index], str(data.get("command", "")), result, cwd)

    def edited(self, path: str) -> None:
        _add(self.facts.files_edited, path)
        _add(self.since_commit, path)
        _add(self.since_verified, path)
        for edits in self.edits_since_failure.values():
            _add(edits, path.rsplit("/", 1)[-1])

    def fixed(self, failure: Failure) -> None:
        """A failing check passes again: what failed and what the assistant said it did about it
        is a gotcha ("`tsc` failed: Cannot assign to 'NODE_ENV'; fixed: use vi.stubEnv ...")."""
        since = self.failed_at.pop(failure.check, len(self.narrations))
        said = self.narrations[since:][-2:]
        edits = self.edits_since_failure.pop(failure.check, [])
        if not said and not edits:
            return  # it passed again on its own (a flaky run): nothing learned
        why = f": {failure.lines[0]}" if failure.lines else ""
        how = " / ".join(said) if said else f"edits to {', '.join(edits[-4:])}"
        self.facts.gotchas.append(Gotcha(text=clip(f"`{failure.check}` failed{why}; fixed: {how}", 500)))

    def file_changes(self, command: str, cwd: str) -> None:
        """Files a successful ``rm`` / ``mv`` (or their git forms) removed or moved."""
        removed, moved = file_changes(command)
        for raw in removed:
            _add(self.facts.files_removed, self.path(raw, cwd))
        for old, new in moved:
            self.facts.files_moved[self.path(old, cwd)] = self.path(new, cwd)

    def command_result(self, run: CommandRun, command: str, result: ToolResult, cwd: str) -> None:
        output = result.text()
        if "nothing to commit, working tree clean" in output:  # git status / an empty commit
            self.since_commit = []
            self.facts.clean_tree = True
        run.ok = outcome(run.kind, output, result.is_error)
        if run.ok is None:
            return
        family = _family(command)
        if not run.ok:
            run.failure_lines = failure_lines(output)
            self.excerpt.append(f"Failed `{run.command}`: " + " | ".join(run.failure_lines))
            if run.check:
                earlier = self.failing.pop(run.check, None)  # re-added last: the newest reads first
                tried = list(earlier.tried) if earlier is not None else []
                edits = self.edits_since_failure.pop(run.check, [])
                if earlier is not None and edits:
                    tried.append(f"edits to {', '.join(edits[-4:])} (it failed again after them)")
                self.failing[run.check] = Failure(check=run.check, lines=run.failure_lines, tried=tried[-3:])
                self.edits_since_failure[run.check] = []
                self.failed_at[run.check] = len(self.narrations)
            elif family:
                self.failed_runs[family] = (run.command, run.failure_lines[0] if run.failure_lines else "")
            return
        self.facts.tracker += tracker_events(command, output)
        for first, second in _DEPENDS.findall(command):
            self.facts.notes = [*self.facts.notes, f"{first} depends on {second} (tracker)"]
        listing = tracker_listing(command, output)
        if listing is not None:
            self.facts.open_items = listing
        self.file_changes(command, cwd)
        failed = self.failed_runs.pop(family, None) if family else None
        if failed is not None and failed[0] != run.command and not run.check:
            why = f" ({failed[1]})" if failed[1] else ""
            self.facts.gotchas.append(Gotcha(text=f"`{failed[0]}` failed{why}; `{run.command}` worked"))
        if run.check:
            for check in list(self.failing):
                left = unsettled(run.check, check)
                if not left:
                    self.fixed(self.failing.pop(check))
                elif len(left) < len(parts(check)):  # part of a compound check passes now
                    failure = self.failing.pop(check)
                    self.failing[JOIN.join(left)] = failure.model_copy(update={"check": JOIN.join(left)})
            _add(self.facts.passed_checks, run.check)
            said = self.narrations[self.last_check_at :][-2:]
            if said:
                self.facts.fix_notes[run.check] = " / ".join(said)
            self.last_check_at = len(self.narrations)
            if run.kind in VERIFYING:
                self.since_verified = []
                self.facts.verified = True
        commit = commit_of(command, output)
        if commit is not None:
            commit.files = list(self.since_commit)
            self.facts.commits.append(commit)
            self.since_commit = []
            # The work a plan or Claude Code's summary described before a commit has reached it;
            # steps stated after the commit are what is left.
            self.facts.plan = None
            self.facts.settled = ["plan", "summary"]
            for check in [c for c in self.failing if concluded_by_commit(c)]:
                del self.failing[check]  # a merge's conflicts are resolved by the commit that ends it

    def finish(self) -> ContextFacts:
        self.catch_up()
        self.end_of_turn()
        # Edits whose result lies past the window's end (Claude Code is still writing) count.
        for use, cwd, _index in self.uses.values():
            raw = use.input.get("file_path") or use.input.get("notebook_path")
            if use.name in EDIT_TOOLS and isinstance(raw, str):
                self.edited(self.path(raw, cwd))
        facts = self.facts
        facts.failures = list(self.failing.values())
        kept: list[str] = []
        for item in reversed(self.excerpt):
            if sum(map(len, kept)) + len(item) > EXCERPT_CHARS:
                break
            kept.append(item)
        facts.excerpt = kept[::-1]
        moved, removed = facts.files_moved, set(facts.files_removed)
        facts.uncommitted = [moved.get(p, p) for p in self.since_commit if p not in removed]
        facts.unverified = [moved.get(p, p) for p in self.since_verified if p not in removed]

        if self.plan_mode:
            where = f" (~/.claude/plans/{self.slug}.md)" if self.slug else ""
            facts.plan = [f"in plan mode: write the plan{where}, then ask for approval with ExitPlanMode"]
        if self.todo is not None:
            facts.tasks = self.todo
        elif self.task_items and all(item.content for item in self.task_items.values()):
            facts.tasks = list(self.task_items.values())  # the whole list was made in this stretch
        facts.task_updates = dict(self.task_items)

        return facts


def digest(entries: Iterable[Entry], roots: Iterable[Path] = ()) -> ContextFacts:
    """Facts of the main-chain entries given (sidechains belong to subagents)."""
    walk = _Walk(roots=[Path(r) for r in roots])
    for entry in entries:
        if isinstance(entry, UserEntry) and not entry.is_sidechain:
            walk.user(entry)
        elif isinstance(entry, AssistantEntry) and not entry.is_sidechain:
            walk.assistant(entry)
    return walk.finish()


def session_root(path: Path, max_lines: int = 200) -> Path | None:
    """The folder a recorded session started in: the first ``cwd`` its transcript names."""
    try:
        with open(path, "rb") as handle:
            for number, raw in enumerate(handle):
                if number >= max_lines:
                    break
                if b'"cwd"' not in raw:
                    continue
                try:
                    obj = orjson.loads(raw)
                except orjson.JSONDecodeError:
                    continue
                cwd = obj.get("cwd") if isinstance(obj, dict) else None
                if isinstance(cwd, str) and cwd.startswith("/"):
                    return Path(cwd)
    except OSError:
        return None
    return None


def windows(path: Path, every: int = 20, roots: Iterable[Path] = ()) -> Iterator[ContextFacts]:
    """Consecutive facts of a transcript, one per ``every`` tool uses (as the hooks would cut
    them when checkpointing that often)."""
    start = session_root(path)
    all_roots = [*roots, *([start] if start else [])]
    pending: list[Entry] = []
    for entry in TranscriptReader(path):
        if isinstance(entry, SystemEntry):
            continue
        pending.append(entry)
        if not isinstance(entry, UserEntry):
            continue
        # Counted here, not as replies arrive: a reply's later lines fold into its entry.
        uses = sum(len(e.tool_uses) for e in pending if isinstance(e, AssistantEntry) and not e.is_sidechain)
        if uses >= every:
            yield digest(pending, all_roots)
            pending = []
    if pending:
        facts = digest(pending, all_roots)
        if not facts.is_empty():
            yield facts
