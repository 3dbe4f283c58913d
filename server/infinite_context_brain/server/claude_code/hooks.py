"""What each Claude Code hook does, whichever way it arrives.

Three ways in, one dispatch (``dispatch``, by the event's action in ``events``):

- a command hook that runs here (SessionStart, PreCompact, or a deferred one whose queue cannot
  be written): ``command.run`` -> ``run_command``;
- a queued record (PostToolUse, Stop, SessionEnd as commands), run by the spool's worker or by
  SessionStart: ``run_record``, with the settings the record carries;
- an ``mcp_tool`` call to the running MCP server (PostToolUse, Stop): ``hook_calls`` ->
  ``dispatch`` on the server's brain.

SessionStart first waits for the hand-offs still running of its project (``settle``: queued
records, a worker's, the MCP server's delayed Stop), within its hook timeout, so the session
after ``/clear`` sees the one before it. A failure is logged, kept for the user (``failures``)
and said once per session as ``systemMessage``; a hook always exits 0.

The project is the one Claude Code works in, decided by ``project.locate_project``: ``--project``,
else ``PROJECT_ROOT``, else ``CLAUDE_PROJECT_DIR``, else the payload's ``cwd``.
"""

from __future__ import annotations

import logging
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from infinite_context_brain.core.brain import ProjectBrain
from infinite_context_brain.core.config import Settings, load_settings
from infinite_context_brain.core.errors import InfiniteContextError, StorageUnavailable
from infinite_context_brain.core.files import NotOwned, owned_dir
from infinite_context_brain.core.logs import level_from_env, setup_logging
from infinite_context_brain.core.project import find_root, locate_project
from infinite_context_brain.core.tokens import count_tokens
from infinite_context_brain.core.transcript.handoff import checkpoint_from_transcript

from ..proxy.process import ensure_for_hook
from . import checkpoint_ask, failures, replay, spool
from .events import Event, settle_seconds

log = logging.getLogger("infinite_context_brain.hooks")


@dataclass(frozen=True)
class HookCall:
    """One hook call as its handler sees it."""

    event: Event
    payload: dict[str, Any]
    settings: Settings
    #: ``--project`` of the hook's command line
    project: Path | None = None
    #: the folder the hook ran in (a queued record's): the project's last resort
    cwd: str | None = None

    @property
    def session(self) -> str | None:
        value = self.payload.get("session_id")
        return value if isinstance(value, str) and value else None

    def client_cwd(self) -> str | None:
        cwd = self.payload.get("cwd")
        return cwd if isinstance(cwd, str) and cwd else self.cwd

    def root(self) -> Path:
        """The folder this call's brain is keyed on (nothing is created)."""
        return find_root(locate_project(self.project, self.settings, self.client_cwd()))

    def open_brain(self) -> ProjectBrain:
        data = self.settings.resolved_data_dir()
        if data.exists():
            try:
                owned_dir(str(data))
            except NotOwned as exc:
                raise StorageUnavailable(
                    str(exc), fix=f"remove {data} (or set INFINITE_CONTEXT_DATA_DIR to a folder of yours)"
                ) from None
        return ProjectBrain.open(self.project, self.settings, client_cwd=self.client_cwd())


#: Claude Code moves additionalContext past 10,000 characters to a file; stay well below.
ADDITIONAL_CONTEXT_CHARS = 9_500
#: the least of the resume budget the brain's text gets beside the head
MIN_BRAIN_TOKENS = 200

_SOURCES = {
    "clear": "The conversation was just cleared (/clear).",
    "compact": "The conversation was just compacted.",
    "resume": "This session was resumed.",
    "startup": "A new session started.",
}


#: what the assistant is asked to do with the brain (a line above the brain's text)
_ASK = (
    "continue from it. At each milestone (a subtask done, before a risky step, when the user "
    "changes direction) call the `checkpoint` tool with its fields: task, in_progress, next_steps "
    "(all that is left), done, decisions with their reason, blockers with what you tried, gotchas."
)


def resume(call: HookCall, brain: ProjectBrain) -> dict[str, Any] | None:
    """SessionStart: the brain into the new context (only when there is one). After a compaction
    the transcript holds Claude Code's own summary of the session: it is read into the brain
    first, so the text after the compaction (and after a later /clear) keeps it."""
    source = str(call.payload.get("source") or "startup")
    if source == "compact" and call.payload.get("transcript_path"):
        checkpoint_from_transcript(brain, call.payload.get("transcript_path"), "compact")
    head = f"{_SOURCES.get(source, '')} infinite-context saved this project's context; {_ASK}\n\n"
    # the head and the brain's text share one budget
    result = brain.resume(max(MIN_BRAIN_TOKENS, brain.settings.resume_tokens - count_tokens(head)))
    if result.state is None:
        return None
    text = head + result.markdown
    if len(text) > ADDITIONAL_CONTEXT_CHARS:
        text = text[: ADDITIONAL_CONTEXT_CHARS - 1] + "…"
    return {"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": text}}


def hand_off(call: HookCall, brain: ProjectBrain) -> dict[str, Any] | None:
    """Stop, SessionEnd, PreCompact: what the transcript added since the last hand-off becomes a
    checkpoint (a no-op when nothing is new)."""
    reason = call.event.reason(call.payload)
    done = checkpoint_from_transcript(brain, call.payload.get("transcript_path"), reason)
    version = done.checkpoint.version if done.checkpoint else None
    log.info(
        "hand-off %s: %s",
        reason,
        f"checkpoint v{version}" if version else "nothing new since the last one",
        extra={"transcript": done.transcript, "from": done.from_offset, "to": done.to_offset},
    )
    return None


def observe(call: HookCall, brain: ProjectBrain) -> dict[str, Any] | None:
    """PostToolUse: the tool result's observation."""
    obs = brain.observe(call.payload)
    log.debug("observation stored", extra={"tool_use_id": obs.tool_use_id, "tokens": obs.tokens})
    return None


ACTIONS: dict[str, Callable[[HookCall, ProjectBrain], dict[str, Any] | None]] = {
    "resume": resume,
    "hand-off": hand_off,
    "observe": observe,
}


def dispatch(call: HookCall, brain: ProjectBrain) -> dict[str, Any] | None:
    """The one place an event meets its handler; returns the hook's JSON output, if any."""
    return ACTIONS[call.event.action](call, brain)


def settle(call: HookCall) -> replay.Settled:
    """The hand-offs still running for this call's project, waited for (and run here when no
    one else is at them) within SessionStart's timeout."""
    try:
        folder = spool.open_spool()
    except FileNotFoundError:
        return replay.Settled()  # nothing was ever queued
    except NotOwned as exc:
        log.error("queued hand-offs not read: %s", exc)
        return replay.Settled()
    root = call.root()

    def ours(record: replay.Record) -> bool:
        mine = HookCall(record.event, record.payload, record.settings(), _path(record.project), record.cwd)
        return mine.root() == root

    return replay.settle(folder, run_record, time.monotonic() + settle_seconds(), ours)


def _path(value: str | None) -> Path | None:
    return Path(value) if value else None


def run(call: HookCall) -> dict[str, Any] | None:
    """A hook call run to its end in this process, on a brain opened for it."""
    still_running: list[str] = []
    warning = None
    if call.event.action == "resume":
        # live endless mode: up before the first request, and the listener on its port is ours
        advice = ensure_for_hook(call.settings.resolved_data_dir())
        if advice is not None and advice.stop:  # Claude Code 2.1 shows it; a later one may also stop
            return {"continue": False, "stopReason": advice.message, "systemMessage": advice.message}
        warning = advice.message if advice is not None else None
        still_running = settle(call).running  # the session that just ended (/clear) comes first
    with call.open_brain() as brain:
        output = failures.with_message(dispatch(call, brain), warning)
    if still_running:
        log.warning("hand-offs still running after %.0f s: %s", settle_seconds(), ", ".join(still_running))
        output = failures.with_message(
            output,
            "infinite-context is still saving the previous session's hand-off (a long transcript); "
            "ask Claude to call the `resume` tool in a minute to load it.",
        )
    return output


def run_record(record: replay.Record) -> None:
    """Run a queued record as its hook would have run (the spool's ``Runner``)."""
    run(HookCall(record.event, record.payload, record.settings(), _path(record.project), record.cwd))


def run_command(event: Event, payload: dict[str, Any], project: str | None) -> int:
    """A command hook run here (``command.run``): its output on stdout; always returns 0."""
    setup_logging(level_from_env())
    data_dir = spool.data_dir()
    session = payload.get("session_id") if isinstance(payload.get("session_id"), str) else None
    try:
        settings = load_settings()
        setup_logging(settings.log_level)  # a level set only in .env takes effect from here on
        output = run(HookCall(event, payload, settings, _path(project)))
        # run here when its queue is unavailable: it still asks
        asked = checkpoint_ask.for_event(
            event.name, payload, settings.checkpoint_nudge, settings.context_window, spool.data_dir()
        )
        output = failures.combined(output, asked)
    except Exception as exc:  # a hook never breaks the session; the log and the user hear why
        if isinstance(exc, InfiniteContextError):
            log.error("hook %s: %s", event.command, exc.message, extra={"fix": exc.fix, "code": exc.code})
            message, fix = exc.message, exc.fix
        else:
            log.exception("hook %s failed", event.command)
            message, fix = f"{type(exc).__name__}: {exc}", None
        failures.record(data_dir, event.name, message, fix, session)
        failures.told(data_dir, session)
        output = {"systemMessage": failures.text(event.name, message, fix)}
    else:
        failures.resolved(data_dir, event.name)
        output = failures.with_message(output, failures.notice(data_dir, session))
    if output is not None:
        sys.stdout.write(orjson.dumps(output).decode() + "\n")
    return 0


def worker_main(argv: list[str]) -> int:
    """``python -m infinite_context_brain.server.claude_code.worker <spool folder>``."""
    setup_logging(level_from_env())
    folder = argv[0] if argv else spool.spool_dir()
    try:
        spool.open_spool(folder)
    except (OSError, NotOwned) as exc:
        log.error("spool %s not used: %s", folder, exc)
        return 0
    replay.work(os.path.abspath(folder), run_record)
    return 0
