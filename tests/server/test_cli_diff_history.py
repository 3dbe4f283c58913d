"""``diff`` and ``history`` as people read them, on a real brain: a diff field by field in text
and Markdown (what was added, removed, changed in each field; no JSON, no unified diff), the
structured result kept with ``--json``; each history row saying what that version changed."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from ..conftest import run_cli

FIRST = (
    "Current task: fix the login bug\nNext steps: wire the button\n"
    "Question: should we use Redis for sessions?"
)
SECOND = "Current task: write the docs\nDone: wired the button\nDecided: use Redis for sessions"


def cli(store_url: str, project: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    done = run_cli(store_url, *args, cwd=project, **env)
    assert done.returncode == 0, done.stderr.decode()
    return subprocess.CompletedProcess(done.args, done.returncode, done.stdout.decode(), done.stderr.decode())


def three_versions(store_url: str, project: Path, **env: str) -> None:
    """v1 and v2 from checkpoints, v3 a rollback to v1."""
    cli(store_url, project, "checkpoint", FIRST, **env)
    cli(store_url, project, "checkpoint", SECOND, **env)
    cli(store_url, project, "rollback", "--version", "1", **env)


def test_diff_field_by_field_in_text_and_markdown(store_url: str, project_dir: Path) -> None:
    three_versions(store_url, project_dir)
    text = cli(store_url, project_dir, "diff", "1", "2", "--format", "text").stdout.splitlines()
    assert text[0] == "Version 1 -> 2:"
    assert "task: fix the login bug -> write the docs" in text
    assert (
        "decisions: ~ should we use Redis for sessions? "
        "(status pending -> decided; decision: use Redis for sessions)"
    ) in text  # one decision changed in place, not removed and added
    assert not any(line.startswith(("---", "+++", "@@")) or '"' in line for line in text)

    markdown = cli(store_url, project_dir, "diff", "1", "2").stdout  # piped: Markdown
    lines = markdown.splitlines()
    assert lines[:3] == ["**Version 1 -> 2:**", "", "- **task**: fix the login bug -> write the docs"]
    at = lines.index("- **decisions**")
    assert lines[at + 1].startswith(
        "  - changed: should we use Redis for sessions? (status pending -> decided"
    )

    # The structured result stays: every changed leaf, and the same changes field by field.
    data = json.loads(cli(store_url, project_dir, "--json", "diff", "1", "2").stdout)
    assert any(c["path"] == "active_context.current_task" for c in data["changes"])
    fields = {f["field"]: f for f in data["fields"]}
    assert fields["active_context.current_task"]["after"] == "write the docs"

    # Undoing the change reads as its mirror image, field by field.
    back = {
        f["field"]: f
        for f in json.loads(cli(store_url, project_dir, "--json", "diff", "2", "3").stdout)["fields"]
    }
    assert back.keys() == fields.keys()
    for name, forward in fields.items():
        assert (back[name]["before"], back[name]["after"]) == (forward["after"], forward["before"]), name
        assert (back[name]["added"], back[name]["removed"]) == (forward["removed"], forward["added"]), name

    same = cli(store_url, project_dir, "diff", "1", "3", "--format", "text").stdout
    assert same == "Versions 1 and 3 hold the same content.\n"


def test_history_rows_say_what_each_version_changed(store_url: str, project_dir: Path) -> None:
    three_versions(store_url, project_dir)
    rows = cli(store_url, project_dir, "history", "--format", "text").stdout.splitlines()
    assert [row.split(" · ")[0] for row in rows] == ["v3", "v2", "v1"]
    v3, v2, v1 = (row.split(" · ", 3) for row in rows)
    assert v3[2] == "rollback:v1" and v3[3].startswith("task: fix the login bug; decisions ~1")
    assert v2[3].startswith("task: write the docs; decisions ~1")
    assert v1[3].startswith("task: fix the login bug; decisions +1; next steps +1")  # all new

    items = json.loads(cli(store_url, project_dir, "--json", "history").stdout)["items"]
    assert [i["changes"] for i in items] == [row[3] for row in (v3, v2, v1)]
    # A shorter list still compares its oldest row with the version before it.
    one = json.loads(cli(store_url, project_dir, "--json", "history", "--limit", "1").stdout)["items"]
    assert [i["changes"] for i in one] == [items[0]["changes"]]

    table = cli(store_url, project_dir, "history").stdout.splitlines()  # piped: Markdown
    assert table[0] == "| version | time (UTC) | merged by | what changed |"
    assert table[2].startswith("| 3 | ") and table[2].endswith(f"| rollback:v1 | {v3[3]} |")


def test_the_oldest_kept_version_says_its_predecessor_is_gone(store_url: str, project_dir: Path) -> None:
    three_versions(store_url, project_dir, INFINITE_CONTEXT_HISTORY_SIZE="2")
    rows = cli(store_url, project_dir, "history", "--format", "text").stdout.splitlines()
    assert [row.split(" · ")[0] for row in rows] == ["v3", "v2"]
    assert rows[0].split(" · ", 3)[3].startswith("task: fix the login bug; ")  # v2 is kept: compared
    assert rows[1].endswith("write the docs (the version before is no longer kept)")
    items = json.loads(cli(store_url, project_dir, "--json", "history").stdout)["items"]
    assert items[1]["changes"] is None
