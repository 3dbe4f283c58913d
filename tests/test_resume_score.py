"""The resume-quality benchmark's scorer on a hand-made moment (benchmarks/resume_score.py)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

from resume_score import current_work, identifiers, moment, score

SUMMARY = """Summary:
7. Pending Tasks:
   - proj-x.3 (open)
8. Current Work:
   Working on **proj-x.2**: the login form. Edited `lib/auth/login_live.ex`; `test_login_redirect`
   still fails in `test/login_test.exs`.
9. Optional Next Step:
   Fix `lib/auth/session.ex` then close proj-x.2.
"""


def assistant(*blocks: dict[str, Any]) -> dict[str, Any]:
    return {"type": "assistant", "message": {"content": list(blocks)}}


def use(uid: str, name: str, **data: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": uid, "name": name, "input": data}


def result(uid: str, text: str, error: bool = False) -> dict[str, Any]:
    return {
        "type": "user",
        "message": {
            "content": [{"type": "tool_result", "tool_use_id": uid, "content": text, "is_error": error}]
        },
    }


LINES = [
    {"type": "user", "message": {"content": "Work on proj-x"}},
    assistant(use("t1", "Edit", file_path="/w/lib/auth/login_live.ex")),
    result("t1", "ok"),
    assistant(use("t2", "Bash", command="mix test test/login_test.exs 2>&1 | tail -5")),
    result("t2", "Exit code 2\n1 failure", error=True),
    assistant(use("t3", "Bash", command="git push")),
    result("t3", "Exit code 128\nfatal: no upstream", error=True),
    assistant(use("t4", "Bash", command="git push -u origin main 2>&1")),
    result("t4", "branch set up"),
    assistant(use("t5", "Bash", command="git commit -m x")),
    result("t5", "Exit code 1\nnothing to commit, working tree clean", error=True),
    assistant({"type": "text", "text": "Should I also refactor the session module?"}),
    {"type": "user", "message": {"content": "no, keep it"}},
]


def test_current_work_and_identifiers() -> None:
    part = current_work(SUMMARY)
    assert "proj-x.3" not in part and "Optional" not in part
    assert identifiers(part) == ["proj-x.2", "test_login_redirect", "login_live.ex", "login_test.exs"]


def test_the_moment_and_the_score() -> None:
    at = moment(LINES, recent_uses=20)
    assert at.edited_recently == ["login_live.ex"]
    assert at.failures == [
        "mix test test/login_test.exs"
    ]  # the push was fixed; an empty commit is no failure
    assert at.answered_questions == ["Should I also refactor the session module?"]
    ours = (
        "## Current work\n**In progress:** proj-x.2 — login form\n"
        "## Blockers\n- `mix test test/login_test.exs` failed\n"
        "## Decisions\n- [open] Should I also refactor the session module? (you asked the user)\n"
        "<system-reminder>x</system-reminder>\n- `lib/auth/login_live.ex`\n"
    )
    s = score(ours, at, identifiers(current_work(SUMMARY)))
    assert (s.ids_found, s.ids_total) == (3, 4)  # test_login_redirect is not named
    assert (s.files_found, s.files_total) == (1, 1)
    assert (s.failures_named, s.failures_total) == (1, 1)
    assert s.markup == 2 and s.stale_questions == 1 and s.chars == len(ours)
