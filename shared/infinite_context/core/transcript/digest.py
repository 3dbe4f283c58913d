"""A checkpoint context cut from a stretch of a Claude Code transcript.

What an engineer would write in a hand-off note, read from the transcript: the user's requests
(the last one is the current task), the assistant's conclusions (its closing text), the files it
edited (Edit / Write / MultiEdit inputs), the commands it ran and the errors it met. Tool outputs
never enter the text: only their observations' gist (commands, error lines). Paths under the
session's working folder are made relative to it, as the merger stores them.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from .reader import AssistantEntry, Entry, SystemEntry, TranscriptReader, UserEntry

EDIT_TOOLS = {"Edit", "Write", "MultiEdit", "NotebookEdit"}
PROMPT_CHARS = 300
CONCLUSION_CHARS = 400
_NOISE_PREFIXES = ("<command-", "<local-command", "<system-reminder", "Caveat:", "[Request interrupted")


@dataclass
class WindowDigest:
    prompts: list[str] = field(default_factory=list)
    conclusions: list[str] = field(default_factory=list)
    files_edited: list[str] = field(default_factory=list)
    files_read: list[str] = field(default_factory=list)
    commands: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    tool_uses: int = 0
    first_line: int = 0
    last_line: int = 0

    @property
    def empty(self) -> bool:
        return not (self.prompts or self.conclusions or self.files_edited or self.commands)

    def context_text(self) -> str:
        """Labelled lines, the checkpoint format both mergers read best."""
        lines: list[str] = [f"Done: {c}" for c in self.conclusions[-3:]]
        if self.files_edited:
            lines.append("Files edited: " + ", ".join(self.files_edited[-15:]))
        if self.files_read:
            lines.append("Files read: " + ", ".join(self.files_read[-10:]))
        if self.commands:
            lines.append("Commands run: " + "; ".join(self.commands[-6:]))
        lines += [f"Error: {e}" for e in self.errors[-3:]]
        if self.prompts:  # the latest request last: of several task lines, the last one wins
            lines += [f"User request: {p}" for p in self.prompts[-4:-1]]
            lines.append(f"Current task: {self.prompts[-1]}")
        return "\n".join(lines)


def _one_line(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _relative(path: str, cwd: str | None) -> str:
    if cwd:
        try:
            return str(Path(path).relative_to(cwd))
        except ValueError:
            pass
    return path


def _add(items: list[str], value: str) -> None:
    if value in items:
        items.remove(value)  # keep the most recent position
    items.append(value)


def digest(entries: Iterable[Entry], cwd: str | None = None) -> WindowDigest:
    """Digest of the main-chain entries given (sidechains belong to subagents)."""
    out = WindowDigest()
    for entry in entries:
        line = getattr(entry, "line", 0)
        out.first_line = out.first_line or line
        out.last_line = max(out.last_line, line)
        if isinstance(entry, UserEntry) and not entry.is_sidechain:
            cwd = cwd or entry.cwd or None
            if not entry.is_meta and not entry.is_compact_summary:
                for text in entry.texts:
                    stripped = text.strip()
                    if stripped and not stripped.startswith(_NOISE_PREFIXES):
                        out.prompts.append(_one_line(stripped, PROMPT_CHARS))
            for result in entry.tool_results:
                if result.is_error:
                    first = next((ln for ln in result.text().splitlines() if ln.strip()), "")
                    if first:
                        out.errors.append(_one_line(first, 200))
        elif isinstance(entry, AssistantEntry) and not entry.is_sidechain:
            for use in entry.tool_uses:
                out.tool_uses += 1
                path = use.input.get("file_path") or use.input.get("notebook_path")
                if use.name in EDIT_TOOLS and isinstance(path, str):
                    _add(out.files_edited, _relative(path, cwd))
                elif use.name == "Read" and isinstance(path, str):
                    _add(out.files_read, _relative(path, cwd))
                elif use.name == "Bash" and isinstance(use.input.get("command"), str):
                    out.commands.append(_one_line(str(use.input["command"]), 120))
            if entry.texts and not entry.tool_uses:  # a reply that ends a turn: its conclusion
                text = " ".join(t.strip() for t in entry.texts if t.strip())
                if text:
                    out.conclusions.append(_one_line(text, CONCLUSION_CHARS))
    return out


def windows(path: Path, every: int = 20) -> Iterator[tuple[WindowDigest, list[str]]]:
    """Consecutive digests of a transcript, one per ``every`` tool uses (the harness replays
    them as checkpoints). Each comes with the files edited in that window."""
    pending: list[Entry] = []
    cwd: str | None = None
    for entry in TranscriptReader(path):
        if isinstance(entry, SystemEntry):
            continue
        if isinstance(entry, UserEntry) and entry.cwd and cwd is None:
            cwd = entry.cwd
        pending.append(entry)
        if not isinstance(entry, UserEntry):
            continue
        # Counted here, not as replies arrive: a reply's later lines fold into its entry.
        uses = sum(len(e.tool_uses) for e in pending if isinstance(e, AssistantEntry) and not e.is_sidechain)
        if uses >= every:
            window = digest(pending, cwd)
            yield window, list(window.files_edited)
            pending = []
    if pending:
        window = digest(pending, cwd)
        if not window.empty:
            yield window, list(window.files_edited)
