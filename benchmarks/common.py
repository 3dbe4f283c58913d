"""Helpers shared by the benchmarks: temp projects, percentiles, rich tables."""

from __future__ import annotations

import atexit
import os
import shutil
import statistics
import tempfile
from collections.abc import Sequence
from pathlib import Path

from rich.console import Console
from rich.table import Table

console = Console(width=200)

_SCRATCH: list[str] = []


def scratch(prefix: str) -> str:
    """A temp folder removed when the benchmark process exits (a 100k-item brain is ~300 MB;
    runs left gigabytes in /tmp)."""
    path = tempfile.mkdtemp(prefix=prefix)
    _SCRATCH.append(path)
    return path


@atexit.register
def _remove_scratch() -> None:
    for path in _SCRATCH:
        shutil.rmtree(path, ignore_errors=True)


#: The benchmarks' own data folder (spool, hand-off cursors, seen store versions): never the
#: user's ``~/.local/share/infinite-context``, for this process and the ones it starts.
DATA_DIR = scratch("ic-bench-data-")
os.environ["INFINITE_CONTEXT_DATA_DIR"] = DATA_DIR
#: The benchmarks' home folder: every process they start (hooks, servers, the Claude Code CLI and
#: its cache, shells) keeps what it would keep in the user's home here.
HOME_DIR = scratch("ic-bench-home-")
for _name, _sub in (
    ("HOME", ""),
    ("XDG_CONFIG_HOME", ".config"),
    ("XDG_CACHE_HOME", ".cache"),
    ("XDG_DATA_HOME", ".local/share"),
    ("XDG_STATE_HOME", ".local/state"),
):
    os.makedirs(os.path.join(HOME_DIR, _sub), exist_ok=True)
    os.environ[_name] = os.path.join(HOME_DIR, _sub).rstrip("/")


def percentile(values: Sequence[float], pct: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    k = (len(ordered) - 1) * pct / 100
    lo, hi = int(k), min(int(k) + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


def median(values: Sequence[float]) -> float:
    return statistics.median(values)


def temp_project(prefix: str = "ic-bench-") -> Path:
    root = Path(scratch(prefix))
    (root / "src").mkdir()
    for name in ("app.py", "auth.py", "models.py"):
        (root / "src" / name).write_text("# bench\n")
    return root


def bench_env(store_url: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("INFINITE_CONTEXT_")}
    env["INFINITE_CONTEXT_STORE_URL"] = store_url
    env["INFINITE_CONTEXT_DATA_DIR"] = DATA_DIR
    return env


def table(title: str, columns: Sequence[str], rows: Sequence[Sequence[object]]) -> None:
    t = Table(title=title, title_justify="left")
    for col in columns:
        t.add_column(col, justify="right" if col not in (columns[0],) else "left")
    for row in rows:
        t.add_row(*[f"{v:.2f}" if isinstance(v, float) else str(v) for v in row])
    console.print(t)
