"""Merge-quality harness: replay checkpoints cut from the real transcripts.

One checkpoint per 20 tool uses; its input is the facts of that window (``transcript/digest.py``,
what the SessionEnd / PreCompact hooks send: requests, task list, tracker commands, files edited,
commands and failures, commits). Files the transcript edited are created (empty) in a temp project,
so the LLM tiers' "named files must exist unless the facts name them" check sees what the real
one saw.
After each merge:
  (a) share of the files edited in that window present in the state (goal offline >= 90%),
  (b) the latest user request reflected in current_task,
  (c) state tokens under the cap (goal: always).
The offline tier always runs; Gemini / Anthropic tiers run when their keys are set.
"""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path

from common import table

from infinite_context_brain.core.brain import ProjectBrain
from infinite_context_brain.core.config import load_settings
from infinite_context_brain.core.merge.integrity import state_tokens
from infinite_context_brain.core.models import ProjectState
from infinite_context_brain.core.transcript.digest import windows

FIXTURES = Path(__file__).resolve().parents[2] / "shared" / "fixtures" / "claude-code"
_WORD = re.compile(r"[a-z0-9_./-]{3,}")


def transcripts() -> list[Path]:
    return sorted(p for p in FIXTURES.rglob("*.jsonl") if "subagents" not in p.parts)


def tiers() -> list[str]:
    found = ["offline"]
    if os.environ.get("GEMINI_API_KEY") or os.environ.get("GOOGLE_API_KEY"):
        found.append("gemini")
    if os.environ.get("ANTHROPIC_API_KEY"):
        found.append("anthropic")
    return found


def files_in_state(state: ProjectState) -> set[str]:
    files = set(state.active_context.active_files)
    for change in state.project_context.recent_changes:
        files.update(change.files)
    return files


def reflects(current_task: str, request: str) -> bool:
    """The task carries the request's words (at least half of its first 12 distinct words)."""
    words = list(dict.fromkeys(_WORD.findall(request.lower())))[:12]
    if not words:
        return True
    task = current_task.lower()
    return sum(w in task for w in words) >= max(1, len(words) // 2)


def replay(path: Path, tier: str) -> tuple[int, int, int, int, int, int, int]:
    """Replay one transcript in a temp folder of its own (store and data dir too), removed after."""
    with tempfile.TemporaryDirectory(prefix="ic-merge-quality-") as tmp:
        return _replay(path, tier, Path(tmp))


def _replay(path: Path, tier: str, project: Path) -> tuple[int, int, int, int, int, int, int]:
    (project / ".git").mkdir()
    store = f"sqlite:///{project / 'brain.db'}"
    settings = load_settings(store_url=store, merge=tier, project_root=project, data_dir=project / ".data")
    checkpoints = files_total = files_kept = asked = reflected = under_cap = 0
    worst = 0
    with ProjectBrain.open(settings=settings) as brain:
        for facts in windows(path, every=20, roots=[project]):
            if facts.is_empty():
                continue
            local = [f for f in facts.files_edited if not Path(f).is_absolute() and ".." not in Path(f).parts]
            for rel in local:
                target = project / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                target.touch()
            brain.checkpoint(facts=facts, wait=True)
            state = brain.resume().state
            assert state is not None
            checkpoints += 1
            present = files_in_state(state)
            files_total += len(local)
            files_kept += sum(f in present for f in local)
            if facts.requests:
                asked += 1
                reflected += reflects(state.active_context.current_task or "", facts.requests[-1])
            tokens = state_tokens(state)
            worst = max(worst, tokens)
            under_cap += tokens <= settings.state_token_cap
    return checkpoints, files_total, files_kept, asked, reflected, under_cap, worst


def run() -> None:
    rows = []
    for tier in tiers():
        for path in transcripts():
            n, total, kept, asked, reflected, under, worst = replay(path, tier)
            if not n:
                continue
            rows.append(
                (
                    path.name[:24],
                    tier,
                    n,
                    f"{kept}/{total} = {kept / total:.0%}" if total else "no edits",
                    f"{reflected}/{asked}" if asked else "-",
                    f"{under}/{n}",
                    worst,
                )
            )
    table(
        "Merge quality, one checkpoint per 20 tool uses (goal offline: (a) >= 90%, (c) always)",
        [
            "transcript",
            "tier",
            "checkpoints",
            "(a) files edited in state",
            "(b) task = latest request",
            "(c) under cap",
            "max state tokens",
        ],
        rows,
    )
    if tiers() == ["offline"]:
        print("(no GEMINI_API_KEY / ANTHROPIC_API_KEY: LLM tiers not run)")
