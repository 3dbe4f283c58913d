"""Endless-mode benchmarks on the real Claude Code fixtures.

* per fixture: context tokens at the end (Claude Code's usage) and with endless mode, tool-output
  tokens before/after (goal: >= 90% removed), transform time including parse (goal: <= 100 ms
  for a 3 MB transcript);
* the token counter's calibration against real usage deltas (meter.CALIBRATION);
* scaling: synthetic transcripts with 1k and 10k tool uses (goal: linear, 10k <= 2 s).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

from common import median, scratch, table

from infinite_context_brain.core.tokens import fast_count
from infinite_context_brain.core.transcript.meter import CALIBRATION
from infinite_context_brain.core.transcript.reader import (
    AssistantEntry,
    SystemEntry,
    TranscriptReader,
    UserEntry,
)
from infinite_context_brain.core.transcript.service import transcript_stats
from infinite_context_brain.core.transcript.transform import transform

FIXTURES = Path(__file__).resolve().parents[2] / "shared" / "fixtures" / "claude-code"


def fixtures() -> list[Path]:
    return sorted(p for p in FIXTURES.rglob("*.jsonl") if "subagents" not in p.parts)


def parse_and_transform_ms(path: Path) -> float:
    """What endless mode costs a client: read the JSONL, replace the tool results."""
    started = time.perf_counter()
    messages = [obj for _n, _raw, obj in TranscriptReader(path).raw_lines() if obj is not None]
    transform(messages)
    return (time.perf_counter() - started) * 1000


def per_fixture(runs: int) -> None:
    rows = []
    for path in fixtures():
        times = [parse_and_transform_ms(path) for _ in range(runs)]
        started = time.perf_counter()
        stats = transcript_stats(path)
        stats_ms = (time.perf_counter() - started) * 1000
        last = stats.curve[-1] if stats.curve else None
        context = f"{last.tokens:,} -> {last.endless_tokens:,}" if last else "-"
        total = f"{1 - last.endless_tokens / last.tokens:.0%}" if last and last.tokens else "-"
        rows.append(
            (
                path.name[:22],
                f"{path.stat().st_size / 1e6:.2f}",
                context,
                total,
                f"{stats.tool_tokens_before:,} -> {stats.tool_tokens_after:,}",
                f"{stats.reduction:.1%}",
                f"{stats.replaced}",
                round(median(times), 1),
                round(stats_ms, 1),
            )
        )
    table(
        "Endless mode per fixture (context at the last reply; goal: >= 90% of tool output removed, "
        "<= 100 ms for 3 MB incl. parse)",
        [
            "transcript",
            "MB",
            "context tokens",
            "context cut",
            "tool-output tokens",
            "removed",
            "replaced",
            "parse+transform ms",
            "full stats ms",
        ],
        rows,
    )


def calibration() -> None:
    """Real context growth between consecutive main-chain replies (minus the reply's own output)
    against our estimate of what was added in between (tool results and user text)."""
    real_total = estimated_total = 0
    errors: list[float] = []
    for path in fixtures():
        previous: AssistantEntry | None = None
        added = 0
        for entry in TranscriptReader(path):
            if isinstance(entry, SystemEntry) and entry.subtype == "compact_boundary":
                previous, added = None, 0
            elif isinstance(entry, UserEntry) and not entry.is_sidechain:
                added += sum(fast_count(r.text()) for r in entry.tool_results)
                added += sum(fast_count(t) for t in entry.texts)
            elif isinstance(entry, AssistantEntry) and not entry.is_sidechain and entry.usage.context_tokens:
                if previous is not None:
                    real = (
                        entry.usage.context_tokens
                        - previous.usage.context_tokens
                        - previous.usage.output_tokens
                    )
                    if added >= 200 and real > 0:  # big enough to measure, no cache reset
                        real_total += real
                        estimated_total += added
                        errors.append(abs(added * CALIBRATION - real) / real)
                previous, added = entry, 0
    ratio = real_total / estimated_total if estimated_total else float("nan")
    table(
        "Token counter vs real usage deltas (tool results + prompts between replies)",
        ["pairs", "real tokens", "estimated", "real / estimated", "CALIBRATION", "median |error| per pair"],
        [
            (
                len(errors),
                f"{real_total:,}",
                f"{estimated_total:,}",
                round(ratio, 3),
                CALIBRATION,
                f"{median(errors):.1%}" if errors else "-",
            )
        ],
    )


READ_BODY = "\n".join(
    f"    {i}→    result = compute_value(item_{i}, options)  # line {i}" for i in range(1, 30)
)
BASH_BODY = "\n".join(f"tests/test_mod{i}.py::test_case_{i} PASSED  [{i}%]" for i in range(40))
GREP_BODY = "\n".join(f"src/pkg/module_{i}.py:{i * 7}:    def handler_{i}(request):" for i in range(30))
KINDS: list[tuple[str, Callable[[int], dict[str, str]], str]] = [
    ("Read", lambda i: {"file_path": f"src/m{i}.py"}, READ_BODY),
    ("Bash", lambda i: {"command": f"pytest tests/test_mod{i}.py"}, BASH_BODY),
    ("Grep", lambda i: {"pattern": "def handler"}, GREP_BODY),
]


def synthetic(path: Path, tool_uses: int) -> None:
    """Read / Bash / Grep in turn, ~2 KB a result (the fixtures' tool results average 2.0 KB)."""
    with open(path, "w") as handle:
        parent = None
        for i in range(tool_uses):
            tid = f"toolu_{i:08d}"
            name, make_input, body = KINDS[i % len(KINDS)]
            a_uuid, u_uuid = f"a{i}", f"u{i}"
            handle.write(
                json.dumps(
                    {
                        "type": "assistant",
                        "uuid": a_uuid,
                        "parentUuid": parent,
                        "isSidechain": False,
                        "message": {
                            "id": f"msg_{i}",
                            "model": "claude-opus-4-6",
                            "content": [
                                {
                                    "type": "tool_use",
                                    "id": tid,
                                    "name": name,
                                    "input": make_input(i),
                                }
                            ],
                            "usage": {
                                "input_tokens": 10,
                                "cache_read_input_tokens": 1000 + i,
                                "output_tokens": 50,
                            },
                        },
                    }
                )
                + "\n"
            )
            handle.write(
                json.dumps(
                    {
                        "type": "user",
                        "uuid": u_uuid,
                        "parentUuid": a_uuid,
                        "isSidechain": False,
                        "message": {
                            "role": "user",
                            "content": [{"type": "tool_result", "tool_use_id": tid, "content": body}],
                        },
                    }
                )
                + "\n"
            )
            parent = u_uuid


def scaling(runs: int) -> None:
    folder = Path(scratch("ic-bench-transcript-"))
    rows = []
    times: dict[int, float] = {}
    for n in (1_000, 10_000):
        path = folder / f"synthetic-{n}.jsonl"
        synthetic(path, n)
        times[n] = median([parse_and_transform_ms(path) for _ in range(runs)])
        rows.append((f"{n:,} tool uses", f"{path.stat().st_size / 1e6:.1f}", round(times[n], 1)))
    rows.append(("10k / 1k time ratio (linear = 10)", "", round(times[10_000] / times[1_000], 2)))
    table(
        "Scaling: parse + transform (goal: linear, 10k <= 2,000 ms)",
        ["transcript", "MB", "ms"],
        rows,
    )


def run(quick: bool, store_url: str) -> None:
    per_fixture(2 if quick else 5)
    calibration()
    scaling(1 if quick else 3)
