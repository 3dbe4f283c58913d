"""Free-text checkpoints: what the brain keeps of the text people and models send it, and where.

Each sequence of ``data/freetext_sequences.json`` (labelled and prose styles, written by hand from
what people and models write, not from the product's rules) is sent checkpoint by checkpoint to a
fresh brain through three real surfaces: the CLI (``infinite-context checkpoint -m``), the MCP
server (the real ``mcp`` client calling the ``checkpoint`` tool) and the notebook (a real Jupyter
kernel running ``%%checkpoint``). The state is then read back whole (``resume --json``).

Measures, per surface:
* pieces kept: each piece of text a checkpoint states is in the brain (anywhere: a field or the
  journal of texts as written);
* landed: the piece is in the field a reader would file it under (task, next step, decision...);
  a piece expected as a plain note counts when it is kept;
* without trace: checkpoints that stored no new version or a version equal to the one before;
* final task: the current task at the end is the one a person would name;
* stale blockers: a blocker the text said was fixed is still listed.

Held-out sets (``data/freetext_heldout*.json``) were written by people who had not read the
product's rules, each after the reader had been changed for the sets before it; each was measured
once as it came (the first-contact figures, in ``docs/benchmarks.md``) before its misses were
studied. They are replayed through the MCP surface (the reader is the same core call on every
surface; the own suite checks that on all three).

Run: ``python benchmarks/run.py --only freetext`` (``--show`` lists what missed).
Goals: every piece kept, no checkpoint without trace, final task right in >= 90% of sequences.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path
from typing import Any

from common import console, table

DATA_DIR = Path(__file__).resolve().parent / "data"
#: the sets, and the surfaces each is replayed through (None: all)
SETS: dict[str, tuple[Path, list[str] | None]] = {
    "own": (DATA_DIR / "freetext_sequences.json", None),
    "held-out 1": (DATA_DIR / "freetext_heldout.json", ["mcp"]),
    "held-out 2": (DATA_DIR / "freetext_heldout2.json", ["mcp"]),
    "held-out 3": (DATA_DIR / "freetext_heldout3.json", ["mcp"]),
}


@dataclass
class Outcome:
    surface: str
    sequence: str
    pieces: int = 0
    kept: int = 0
    landed: int = 0
    checkpoints: int = 0
    without_trace: int = 0
    task_right: bool = False
    stale_blockers: int = 0
    misses: list[str] = field(default_factory=list)


def sequences(path: Path) -> list[dict[str, Any]]:
    return list(json.loads(path.read_text(encoding="utf-8"))["sequences"])


def _norm(text: str) -> str:
    return " ".join(text.lower().replace("`", "").replace("*", "").split())


def _fields(state: dict[str, Any]) -> dict[str, list[str]]:
    ac, pc = state["active_context"], state["project_context"]
    decisions = ac.get("active_decisions", [])
    return {
        "task": [ac.get("current_task", ""), ac.get("earlier_request", "")],
        "progress": [ac.get("in_progress", "")],
        "next": [s["text"] for s in ac.get("next_steps", [])] + [ac.get("current_task", "")],
        "done": [c["summary"] for c in pc.get("recent_changes", [])],
        "decision": [
            f"{d.get('question', '')} {d.get('decision') or ''} {d.get('reason', '')}" for d in decisions
        ],
        "question": [d.get("question", "") for d in decisions],
        "blocker": [
            f"{b['check']} {b.get('detail', '')} {' '.join(b.get('tried', []))}"
            for b in ac.get("blockers", [])
        ],
        "note": ac.get("notes", []),
        "gotcha": ac.get("gotchas", []),
        "files": ac.get("active_files", []),
        "overview": [pc.get("overview", "")],
        "architecture": [pc.get("architecture", "")],
    }


def score(surface: str, sequence: dict[str, Any], states: list[dict[str, Any]]) -> Outcome:
    """``states``: the whole state read back after each checkpoint (None when none was stored)."""
    final = states[-1]
    out = Outcome(surface, sequence["name"], checkpoints=len(sequence["checkpoints"]))
    fields = {k: [_norm(v) for v in vs if v] for k, vs in _fields(final).items()}
    everything = _norm(json.dumps(final, ensure_ascii=False))
    previous: dict[str, Any] | None = None
    for state in states:
        content = {k: v for k, v in state.items() if k != "meta"}
        if previous is not None and content == previous:
            out.without_trace += 1
        previous = content
    versions = [s["meta"]["version"] for s in states]
    out.without_trace += sum(1 for a, b in pairwise(versions) if b <= a)
    for checkpoint, after in zip(sequence["checkpoints"], states, strict=True):
        # where a piece landed: in the state right after its checkpoint (later ones move it on)
        landed = {k: [_norm(v) for v in vs if v] for k, vs in _fields(after).items()}
        for piece, kind in checkpoint["pieces"]:
            out.pieces += 1
            p = _norm(piece)
            if p in everything:
                out.kept += 1
            else:
                out.misses.append(f"lost: {piece!r}")
            if (kind == "note" and p in everything) or any(p in v for v in landed.get(kind, [])):
                out.landed += 1
            else:
                where = [k for k, vs in landed.items() if any(p in v for v in vs)] or ["journal only"]

                out.misses.append(f"{kind} {piece!r} landed in {', '.join(where)}")
    task = _norm(final["active_context"].get("current_task", ""))
    out.task_right = any(_norm(t) in task for t in sequence["task"])
    if not out.task_right:
        out.misses.append(f"task is {task!r}, expected one of {sequence['task']}")
    for gone in sequence.get("not_blockers", []):
        if any(_norm(gone) in b for b in fields["blocker"]):
            out.stale_blockers += 1
            out.misses.append(f"still a blocker: {gone!r}")
    return out


# ---- the surfaces --------------------------------------------------------------------------------


def _project(work: Path) -> tuple[Path, dict[str, str]]:
    project = work / "project"
    (project / ".git").mkdir(parents=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("INFINITE_CONTEXT_", "CLAUDE"))}
    env.update(
        HOME=str(work / "home"),
        INFINITE_CONTEXT_STORE_URL=f"sqlite:///{work / 'brain.db'}",
        INFINITE_CONTEXT_DATA_DIR=str(work / "data"),
        INFINITE_CONTEXT_MERGE="offline",
    )
    (work / "home").mkdir()
    return project, env


def _cli(args: list[str], project: Path, env: dict[str, str]) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "infinite_context_brain.server", *args, "--project", str(project)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    if done.returncode != 0:
        raise RuntimeError(f"{args[:2]} failed: {done.stderr[-500:]}")
    return done.stdout


def _state(project: Path, env: dict[str, str]) -> dict[str, Any]:
    return dict(json.loads(_cli(["--json", "resume"], project, env))["state"])


def via_cli(sequence: dict[str, Any]) -> list[dict[str, Any]]:
    with tempfile.TemporaryDirectory(prefix="ic-freetext-cli-") as tmp:
        project, env = _project(Path(tmp))
        states = []
        for checkpoint in sequence["checkpoints"]:
            _cli(["checkpoint", "-m", checkpoint["text"]], project, env)
            states.append(_state(project, env))
        return states


async def _mcp(sequence: dict[str, Any], project: Path, env: dict[str, str]) -> list[dict[str, Any]]:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(
        command=sys.executable, args=["-m", "infinite_context_brain.server", "mcp"], cwd=str(project), env=env
    )
    states = []
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        for checkpoint in sequence["checkpoints"]:
            result = await session.call_tool("checkpoint", {"context": checkpoint["text"]})
            if result.is_error:
                raise RuntimeError(str(result.content))
            states.append(_state(project, env))
    return states


def via_mcp(sequence: dict[str, Any]) -> list[dict[str, Any]]:
    with tempfile.TemporaryDirectory(prefix="ic-freetext-mcp-") as tmp:
        project, env = _project(Path(tmp))
        return asyncio.run(_mcp(sequence, project, env))


def via_notebook(sequence: dict[str, Any]) -> list[dict[str, Any]]:
    import nbformat
    from nbclient import NotebookClient

    with tempfile.TemporaryDirectory(prefix="ic-freetext-nb-") as tmp:
        project, env = _project(Path(tmp))
        show = "state = %resume\nprint(json.dumps(state.model_dump(mode='json')))"
        cells = ["import json\n%load_ext infinite_context_brain.notebook"]
        for checkpoint in sequence["checkpoints"]:
            cells += [f"%%checkpoint\n{checkpoint['text']}", show]
        nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(src) for src in cells])
        saved = dict(os.environ)
        os.environ.clear()
        os.environ.update(env)  # the kernel inherits this process's environment
        try:
            NotebookClient(
                nb, kernel_name="python3", timeout=120, resources={"metadata": {"path": str(project)}}
            ).execute()
        finally:
            os.environ.clear()
            os.environ.update(saved)
        states = []
        for cell in nb.cells[2::2]:
            printed = "".join(o.get("text", "") for o in cell.outputs)
            states.append(json.loads(printed.strip().splitlines()[-1]))
        return states


SURFACES = {"cli": via_cli, "mcp": via_mcp, "notebook": via_notebook}


def run(show: bool = False, surfaces: list[str] | None = None) -> list[Outcome]:
    outcomes: list[Outcome] = []
    rows = []
    for set_name, (path, set_surfaces) in SETS.items():
        names = [n for n in (set_surfaces or list(SURFACES)) if surfaces is None or n in surfaces]
        for name in names:
            mine = [score(name, seq, SURFACES[name](seq)) for seq in sequences(path)]
            for o in mine:
                o.sequence = f"{set_name}/{o.sequence}"
            outcomes += mine
            pieces = sum(o.pieces for o in mine)
            landed = sum(o.landed for o in mine)
            right = sum(o.task_right for o in mine)
            rows.append(
                (
                    set_name,
                    name,
                    len(mine),
                    f"{sum(o.kept for o in mine)}/{pieces}",
                    f"{landed}/{pieces} ({100 * landed / pieces:.0f}%)",
                    f"{sum(o.without_trace for o in mine)}/{sum(o.checkpoints for o in mine)}",
                    f"{right}/{len(mine)} ({100 * right / len(mine):.0f}%)",
                    sum(o.stale_blockers for o in mine),
                )
            )
    table(
        "Free-text checkpoints (goals: every piece kept, 0 without trace, final task right in >= 90%)",
        [
            "set",
            "surface",
            "sequences",
            "pieces kept",
            "in the field a reader expects",
            "checkpoints without trace",
            "final task right",
            "stale blockers",
        ],
        rows,
    )
    if show:
        for o in outcomes:
            for miss in o.misses:
                console.print(f"{o.surface} {o.sequence}: {miss}", markup=False)
    return outcomes


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    run(show="--show" in sys.argv, surfaces=[a for a in sys.argv[1:] if a in SURFACES] or None)
