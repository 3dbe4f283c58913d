"""Reading shell commands and their output the way an engineer skims a terminal.

Which runs are checks (tests, linters, type checkers, builds, commits and pushes) and under which
key a later run of the same check settles an earlier failure; whether a run failed (the exit
code Claude Code reports, or a failure summary a pipe through ``tail`` hid); the few lines that
say why; issue-tracker commands (``bd update X --status in_progress``, ``gh issue close 12``)
and ``git commit`` results.
"""

from __future__ import annotations

import re
import shlex

from ..facts import CheckKind, Commit, TrackerAction, TrackerEvent
from ..redact import redact

_CHECKS: list[tuple[CheckKind, re.Pattern[str]]] = [
    (
        "test",
        re.compile(
            r"(?:^|\s)(?:pytest|py\.test|tox|nox|jest|vitest|mocha|ava|rspec|phpunit|ctest|bats|"
            r"go test|cargo (?:test|nextest)|mix test|(?:npm|yarn|pnpm|bun)(?: run)? test\S*|"
            r"make (?:test|check)\S*|dotnet test|gradle\w* test|mvn\w* (?:test|verify)|deno test|"
            r"swift test|python\d?(?:\.\d+)? -m (?:pytest|unittest)|node --test|playwright test|"
            r"(?:mise|just|task|poe|invoke|rake|nx|turbo|hatch|pdm|uv) (?:run )?test[\w:.-]*)\b"
        ),
    ),
    (
        "lint",
        re.compile(
            r"(?:^|\s)(?:ruff(?: check)?|flake8|pylint|eslint|biome|(?:mix )?credo|rubocop|golangci-lint|"
            r"cargo clippy|shellcheck|prettier --check|black --check|mix format --check\S*|"
            r"(?:npm|yarn|pnpm)(?: run)? lint\S*|make lint|"
            r"(?:mise|just|task|poe|invoke|rake|nx|turbo|hatch|pdm|uv) (?:run )?"
            r"(?:lint|fmt|format)[\w:.-]*)\b"
        ),
    ),
    (
        "typecheck",
        re.compile(
            r"(?:^|\s)(?:mypy|pyright|tsc|mix dialyzer|dialyzer|(?:npm|yarn|pnpm)(?: run)? typecheck)\b"
        ),
    ),
    (
        "build",
        re.compile(
            r"(?:^|\s)(?:mix compile|cargo (?:build|check)|go (?:build|vet)|"
            r"(?:npm|yarn|pnpm)(?: run)? build\S*|cmake --build|make|ninja|gcc|g\+\+|clang|javac|"
            r"mvn\w* (?:package|compile|install)|"
            r"gradle\w* (?:build|assemble)|docker build|vite build|next build|python\d? -m build|"
            r"uv build|pip install -e)\b"
        ),
    ),
    ("vcs", re.compile(r"(?:^|\s)git (?:commit|push|merge|rebase|pull|cherry-pick)\b")),
]
_SEGMENT_SPLIT = re.compile(r"\s*(?:&&|\|\||;)\s*")
_PIPE_TAIL = re.compile(r"\s*\|.*$")
_REDIRECTS = re.compile(r"\s*(?:\d?>&\d|\d?>>?\s*\S+|<\s*\S+)")
_ENV_PREFIX = re.compile(r"^(?:\w+=\S*\s+)+")
_HEREDOC = re.compile(r"\$\(cat <<'?(\w+)'?\n(.*?)\n\s*\1\s*\)", re.S)
CHECK_CHARS = 100


#: how the checks of one compound command are joined in its key (``mix compile && mix credo``)
JOIN = " && "


def classify(command: str) -> tuple[CheckKind, str]:
    """(kind, check key) of a shell command; ("other", "") when it is no check. A compound
    command (``&&``, ``;``, ``||``) is judged per command: its key joins every check it runs, and
    its kind is the first check's."""
    flat = _HEREDOC.sub('"…"', command)
    kinds: list[CheckKind] = []
    keys: list[str] = []
    for segment in _SEGMENT_SPLIT.split(flat.replace("\n", " ")):
        segment = _ENV_PREFIX.sub("", _REDIRECTS.sub("", _PIPE_TAIL.sub("", segment))).strip()
        for kind, pattern in _CHECKS:
            match = pattern.search(segment)
            if match:
                if kind == "vcs":  # a commit is the same check whatever its message
                    key = " ".join(segment[match.start() :].split()[:2])
                else:
                    key = " ".join(segment[match.start() :].split())
                key = redact(key)[:CHECK_CHARS]  # redacted before the cut
                if key not in keys:
                    kinds.append(kind)
                    keys.append(key)
                break
    if not keys:
        return "other", ""
    return kinds[0], JOIN.join(keys)


def parts(check: str) -> list[str]:
    """The single checks of a (compound) check key."""
    return [p for p in check.split(JOIN) if p]


def _settles_one(passed: str, failed: str) -> bool:
    if passed == failed:
        return True
    p, f = passed.split(), failed.split()
    if not p or not f or p[0] != f[0]:
        return False
    return set(p) <= set(f)


def unsettled(passed: str, failed: str) -> list[str]:
    """The checks of ``failed`` that a passing run of ``passed`` leaves unsettled (same tool and
    the passing run the same or broader: ``mix test`` settles ``mix test test/a.exs``)."""
    done = parts(passed)
    return [f for f in parts(failed) if not any(_settles_one(p, f) for p in done)]


_CONCLUDED = re.compile(r"^git (?:merge|rebase|pull|cherry-pick|revert|am)\b")


def concluded_by_commit(check: str) -> bool:
    """A failed merge (rebase, pull, cherry-pick...) stops at its conflicts; the commit that
    records their resolution concludes it."""
    return all(_CONCLUDED.match(part) for part in parts(check))


def settles(passed: str, failed: str) -> bool:
    """A passing run of ``passed`` fixes every check of a failure of ``failed``."""
    return not unsettled(passed, failed)


_MOVE = re.compile(r"^(?:git\s+)?mv\s+(?:-[a-zA-Z]+\s+)*(\S+)\s+(\S+)$")
_REMOVE = re.compile(r"^(?:git\s+)?rm\s+((?:-[a-zA-Z-]+\s+)*)(.+)$")


def file_changes(command: str) -> tuple[list[str], list[tuple[str, str]]]:
    """(removed paths, (old, new) moves) of ``rm``, ``git rm``, ``mv``, ``git mv`` commands in a
    shell command line, as written (relative to the command's folder)."""
    removed: list[str] = []
    moved: list[tuple[str, str]] = []
    for segment in _SEGMENT_SPLIT.split(command.replace("\n", " ")):
        segment = _ENV_PREFIX.sub("", _PIPE_TAIL.sub("", segment)).strip()
        move = _MOVE.match(segment)
        if move:
            moved.append((move.group(1).strip("'\""), move.group(2).strip("'\"")))
            continue
        remove = _REMOVE.match(segment)
        if remove and "--cached" not in remove.group(1):
            try:
                words = shlex.split(remove.group(2))
            except ValueError:
                words = remove.group(2).split()
            removed += [w for w in words if not w.startswith("-") and not any(c in w for c in "*?")]
    return removed, moved


_EXIT = re.compile(r"^Exit code (\d+)", re.M)
_SUMMARY_FAILED = re.compile(
    r"\b[1-9]\d* (?:failed|failures?|errors?)\b|^(?:FAILED|FAIL)\b|^\s*\*\* \(\w*Error\)|"
    r"^error(?:\[\w+\])?:|:\d+(?::\d+)?: error\b|\berror TS\d+|^Traceback \(most recent call last\)|"
    r"npm ERR!|^Found [1-9]\d* errors?\b|✖ [1-9]\d* problems?|^fatal: |Pre-commit validation failed",
    re.M,
)
_FAILURE_LINE = re.compile(
    r"error|fail|exception|assert|panicked|fatal|✗|✖|traceback|not found|undefined|cannot|"
    r"expected|mismatch|denied|refused",
    re.I,
)
_BENIGN = re.compile(r"\b0 (?:failed|failures?|errors?)\b|^\s*$", re.I)
_NOT_RUN = (
    "The user doesn't want to proceed",
    "Command running in background",
    "[Request interrupted",
)


def outcome(kind: CheckKind, output: str, is_error: bool) -> bool | None:
    """True (passed), False (failed) or None (not run, still running)."""
    head = output.lstrip()[:200]
    if any(head.startswith(marker) for marker in _NOT_RUN):
        return None
    if kind == "vcs" and "nothing to commit" in output[:400]:  # git's exit 1 on an empty commit
        return None
    if is_error:
        return False
    # A pipe through tail hides the exit code: a check's own failure summary still tells.
    return kind == "other" or _SUMMARY_FAILED.search(output) is None


#: a section banner of a test runner's report ("===== FAILURES =====", "_____ test_x _____")
_BANNER = re.compile(r"^[=_\-*#~]{3,}\s*[\w .:/\[\]-]*?\s*[=_\-*#~]{3,}$|^[=_\-*#~]{3,}$")


def failure_lines(output: str, limit: int = 3, chars: int = 200) -> list[str]:
    # Redacted before any cut: a key split at the limit would survive its pattern.
    lines = [ln.strip() for ln in redact(_EXIT.sub("", output)).splitlines()]
    lines = [ln for ln in lines if not _BANNER.match(ln)]  # "===== FAILURES =====" says nothing
    picked = [ln for ln in lines if _FAILURE_LINE.search(ln) and not _BENIGN.search(ln)]
    if not picked:
        picked = [ln for ln in lines if ln]
    out: list[str] = []
    for line in picked:
        line = line if len(line) <= chars else line[: chars - 1].rsplit(" ", 1)[0] + "…"
        if line not in out:
            out.append(line)
        if len(out) >= limit:
            break
    return out


# ---- issue trackers ---------------------------------------------------------------------------

_STATUS_CLAIMED = re.compile(r"in[_ -]?progress|started|doing|active|wip", re.I)
_STATUS_CLOSED = re.compile(r"closed?|done|resolved|completed?|fixed", re.I)
_BEADS = re.compile(r"(?:^|[\s;&|(])(?:bd|br|beads)\s+(update|close|create|reopen|show|start)\b([^;&|\n]*)")
_GH_ISSUE = re.compile(r"\bgh\s+issue\s+(close|reopen|develop|view|edit)\s+#?(\d+)([^;&|\n]*)")
_STATUS_FLAG = re.compile(r"--status[= ]\s*['\"]?([\w -]+?)['\"]?(?:\s|$)")
_BEADS_ACTIONS: dict[str, TrackerAction] = {
    "close": "closed",
    "reopen": "reopened",
    "show": "viewed",
    "start": "claimed",
}
_GH_ACTIONS: dict[str, TrackerAction] = {
    "close": "closed",
    "reopen": "reopened",
    "develop": "claimed",
    "view": "viewed",
}
_KEY_ID = re.compile(r"\b([A-Z][A-Z0-9]+-\d+)\b")
_TITLE_SEP = re.compile(r"^\s*(?:[·:\-—|]\s*)+")
# Status decorations trackers print around a title: [● P1 · OPEN], [EPIC], ● P2, ✓, ○
_TITLE_NOISE = re.compile(r"\[[^\]]*\]|[●○◐◑✓✔✗✘☐☑]\s*(?:P\d\b)?")
_REASON_FLAG = re.compile(r"--reason[= ]\s*(['\"])(.+?)(?<!\\)\1", re.S)


def _ids(args: str) -> list[str]:
    try:
        words = shlex.split(args)
    except ValueError:
        words = args.split()
    out: list[str] = []
    skip_next = False
    for word in words:
        if skip_next:
            skip_next = False
            continue
        if word.startswith("-"):
            skip_next = "=" not in word and word not in {"--json", "--force", "-f"}
            continue
        if re.fullmatch(r"[\w][\w.\-]*", word):
            out.append(word)
    return out


def _words(text: str, limit: int) -> str:
    """One line of at most ``limit`` characters, cut between words (redacted before the cut)."""
    flat = " ".join(redact(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1].rsplit(" ", 1)[0].rstrip(",;:") + "…"


def _title(output: str, item: str) -> str:
    # The id as a whole word: "spotter-gqc" must not match inside "spotter-gqc.1".
    whole = re.compile(r"(?<![\w.\-])" + re.escape(item) + r"(?![\w\-]|\.\w)")
    for line in output.splitlines():
        found = whole.search(line)
        if found is None:
            continue
        rest = _TITLE_NOISE.sub(" ", line[found.end() :])
        rest = " ".join(_TITLE_SEP.sub("", rest).split()).strip(" ·:-—|")
        if len(rest) >= 3 and rest.lower() not in {"closed", "updated", "done"}:
            return _words(rest, 160)
    return ""


def tracker_events(command: str, output: str) -> list[TrackerEvent]:
    events: list[TrackerEvent] = []

    reason = _REASON_FLAG.search(command)

    def add(item: str, action: TrackerAction) -> None:
        if action == "closed":  # what the person wrote when closing, not the tool's echo
            title = _words(reason.group(2), 200) if reason else ""
        else:
            title = _title(output, item) if action != "created" else ""
        events.append(TrackerEvent(item=item, action=action, title=title))

    for verb, args in _BEADS.findall(command):
        status = _STATUS_FLAG.search(args)
        ids = _ids(args)
        if verb == "create":
            created = re.search(r"(?:Created issue|created)[:\s]+([\w.\-]+)", output, re.I)
            title = ids[0] if ids else ""
            if created:
                events.append(TrackerEvent(item=created.group(1), action="created", title=_words(title, 160)))
            continue
        action = _BEADS_ACTIONS.get(verb)
        if verb == "update" and status:
            value = status.group(1)
            action = (
                "claimed" if _STATUS_CLAIMED.fullmatch(value.strip()) else
                "closed" if _STATUS_CLOSED.fullmatch(value.strip()) else None
            )  # fmt: skip
        if action is not None:
            for item in ids:
                add(item, action)
    for verb, number, rest in _GH_ISSUE.findall(command):
        action = _GH_ACTIONS.get(verb)
        if verb == "edit" and _STATUS_CLAIMED.search(rest):
            action = "claimed"
        if action is not None:
            add(f"#{number}", action)
    if not events:
        for key in dict.fromkeys(_KEY_ID.findall(command)):
            if re.search(r"in[ _-]?progress", command, re.I):
                add(key, "claimed")
            elif re.search(r"\b(?:done|close[ds]?|resolved?)\b", command, re.I):
                add(key, "closed")
    return events


# ---- commits ----------------------------------------------------------------------------------

_COMMIT_LINE = re.compile(r"^\[([^\]\s]+)(?: \([^)]*\))? ([0-9a-f]{7,40})\] (.+)$", re.M)
_MESSAGE_FLAG = re.compile(r"(?:-m|--message)[= ]\s*(['\"])(.+?)(?<!\\)\1", re.S)


def commit_of(command: str, output: str) -> Commit | None:
    """The commit a successful ``git commit`` made (sha + subject), else None."""
    if not re.search(r"\bgit\b[^|;&\n]*\bcommit\b", command):
        return None
    line = _COMMIT_LINE.search(output)
    if line:
        return Commit(sha=line.group(2)[:12], subject=_words(line.group(3), 200))
    heredoc = _HEREDOC.search(command)
    if heredoc:
        subject = next((ln.strip() for ln in heredoc.group(2).splitlines() if ln.strip()), "")
    else:
        flag = _MESSAGE_FLAG.search(command)
        subject = flag.group(2).splitlines()[0].strip() if flag else ""
    return Commit(subject=_words(subject, 200)) if subject else None
