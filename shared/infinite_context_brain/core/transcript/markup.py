"""Telling the user's words from what Claude Code injects into user turns.

Claude Code writes more than the typed prompt into ``user`` lines: system reminders, background
task notifications, slash-command wrappers, local command output, persisted-output stand-ins,
interrupt markers. ``user_text`` keeps what the person wrote (a slash command becomes its name
and arguments); ``strip_markup`` removes wrapper tags from any text that may carry them.
"""

from __future__ import annotations

import re

# Blocks whose content is never the user's words (the whole block goes).
_DROPPED_BLOCKS = (
    "system-reminder",
    "task-notification",
    "local-command-stdout",
    "local-command-stderr",
    "local-command-caveat",
    "persisted-output",
    "session-agent-response",
    "bash-stdout",
    "bash-stderr",
    "user-prompt-submit-hook",
    "command-message",
    "command-contents",
    "cross-session-message",
    "retrieval_status",
    "tool_use_error",
)
# A block goes with its content only when it is closed (or opens the text and runs to its end, as
# a cut-off injected turn does): a tag merely mentioned mid-text ("the <persisted-output> stand-in
# ...") goes alone, the words after it stay.
_BLOCK_RE = re.compile(r"<(" + "|".join(map(re.escape, _DROPPED_BLOCKS)) + r")(?:\s[^>]*)?>.*?</\1>", re.S)
_OPEN_BLOCK_RE = re.compile(
    r"^\s*<(" + "|".join(map(re.escape, _DROPPED_BLOCKS)) + r")(?:\s[^>]*)?>(?!.*</\1>)", re.S
)
# Any complete tag-shaped block, whatever its name (wrappers change between versions).
_ANY_BLOCK_RE = re.compile(r"<([a-z][\w:-]*)(?:\s[^>]*)?>.*?</\1>", re.S | re.I)
_WORD_RE = re.compile(r"[^\W\d_]{2,}")
# Any other tag-shaped wrapper with a dash or underscore in its name (Claude Code's style); its
# content stays, the tags go. Plain HTML-like words in prose (<div>, <T>) are left alone.
_TAG_RE = re.compile(r"</?[a-z][a-z0-9]*(?:[-_][a-z0-9]+)+(?:\s[^>]*)?>")
_COMMAND_RE = re.compile(r"<command-name>\s*(/?[^<\s]+)\s*</command-name>", re.S)
_ARGS_RE = re.compile(r"<command-args>(.*?)</command-args>", re.S)
_BASH_INPUT_RE = re.compile(r"<bash-input>(.*?)</bash-input>", re.S)
_NOISE_LINES = re.compile(
    r"^\s*(?:\[Request interrupted[^\]]*\]|Caveat: The messages below were generated.*|"
    r"This session is being continued from a previous conversation.*|"
    r"Read the output file to retrieve the result:.*)$",
    re.M,
)
# Turns Claude Code writes on its own (a background task finished, a subagent answered, a hook
# blocked the stop): the whole user turn is injected, trailer lines included.
_INJECTED_TURN = re.compile(
    r"^\s*(?:<(?:task-notification|session-agent-response|cross-session-message)\b|"
    r"(?:Stop|SubagentStop|PreToolUse|PostToolUse|UserPromptSubmit)(?::\w+)? hook (?:feedback|error)"
    r"|(?:Stop|PreToolUse|PostToolUse) hook blocking error)"
)
#: Claude Code's own session commands: they steer the tool, they are not work
SESSION_COMMANDS = frozenset(
    "clear compact context cost exit quit help status config model login logout mcp hooks memory "
    "permissions resume rewind doctor agents add-dir vim theme terminal-setup ide bug release-notes "
    "upgrade usage export statusline output-style todos privacy-settings".split()
)
#: replies that steer rather than ask for something new
_ACKNOWLEDGEMENT = re.compile(
    r"^(?:continue|go on|go ahead|proceed|carry on|keep going|resume|yes|yeah|yep|y|ok|okay|sure|"
    r"please|please do|do it|go|next|check again|try again|again|thanks|thank you|great|good|"
    r"looks good|lgtm|perfect|nice|done)\W*$",
    re.I,
)


def strip_markup(text: str) -> str:
    if _OPEN_BLOCK_RE.match(text):
        return ""
    text = _BLOCK_RE.sub(" ", text)
    text = _TAG_RE.sub(" ", text)
    return _NOISE_LINES.sub("", text).strip()


def user_text(text: str) -> str:
    """What the person wrote in a user turn ("" when it was all injected)."""
    command = _COMMAND_RE.search(text)
    if command:
        name = command.group(1).strip()
        if name.lstrip("/") in SESSION_COMMANDS:
            return ""
        args = _ARGS_RE.search(text)
        rest = " ".join(args.group(1).split()) if args else ""
        return f"{'/' + name.lstrip('/')} {rest}".strip()
    bash = _BASH_INPUT_RE.search(text)
    if bash:
        return f"! {' '.join(bash.group(1).split())}"
    if text.lstrip().startswith("Caveat:") or _INJECTED_TURN.match(text) or _wrapped_only(text):
        return ""
    return strip_markup(text)


def _wrapped_only(text: str) -> bool:
    """A turn that opens with a tag and holds no words of its own outside tag blocks: written by
    Claude Code or a tool (a background task's notification, a hook's result, in whatever wrapper
    a version uses), not typed by the person."""
    if not text.lstrip().startswith("<"):
        return False
    rest = _NOISE_LINES.sub("", _ANY_BLOCK_RE.sub(" ", text))
    return len(_WORD_RE.findall(rest)) < 3


def compact_instructions(text: str) -> str:
    """What the user asked ``/compact`` to focus on ("" for another turn, or a bare /compact)."""
    command = _COMMAND_RE.search(text)
    if command is None or command.group(1).strip().lstrip("/") != "compact":
        return ""
    args = _ARGS_RE.search(text)
    return " ".join(args.group(1).split()) if args else ""


def is_acknowledgement(text: str) -> bool:
    """ "continue", "yes", "check again": the user steers; the task stays what it was."""
    return bool(_ACKNOWLEDGEMENT.match(text.strip()))
