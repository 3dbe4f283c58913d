"""Redaction on real transcript text, against an earlier implementation in the same run.

The texts are what the hooks and the store redact: every string in the message contents of the
Claude Code fixture transcripts (prompts, replies, tool inputs, tool outputs), grouped by size.
The peer is ``core/redact*.py`` as of a git commit (``--peer-ref``), loaded from ``git show`` into
a temporary package; both run over the same texts, alternating which goes first, each pass
starting with empty memos (the peer kept a set of short clean texts). Figures are the median
pass; the ratio is ours over the peer's (below 1: faster).

    python benchmarks/redact_bench.py [--peer-ref REF] [--passes N]
"""

from __future__ import annotations

import argparse
import importlib
import json
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import median, scratch, table

from infinite_context_brain.core import redact as ours

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT.parent / "shared" / "fixtures" / "claude-code"
#: the last commit with the redaction this one replaced (rules with literal starts read from
#: their regex source, five gates, a memo of short clean texts)
PEER_REF = "52175f1"
BUCKETS = (
    ("notes, tags (< 200 chars)", 0, 200),
    ("200 - 5k chars", 200, 5_000),
    ("tool outputs (>= 5k)", 5_000, 10**9),
)


def _strings(value: object) -> Iterator[str]:
    if isinstance(value, str):
        if value:
            yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def transcript_texts() -> list[str]:
    texts: list[str] = []
    for path in sorted(FIXTURES.rglob("*.jsonl")):
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            message = entry.get("message") if isinstance(entry, dict) else None
            if isinstance(message, dict):
                texts += _strings(message.get("content"))
    return texts


def load_peer(ref: str) -> ModuleType:
    """``core/redact*.py`` at ``ref``, as the package ``peer_redact``."""
    package = Path(scratch("ic-bench-redact-")) / "peer_redact"
    package.mkdir()
    (package / "__init__.py").write_text("")
    listed = subprocess.run(
        ["git", "-C", str(ROOT), "ls-tree", "--name-only", ref, "shared/infinite_context_brain/core/"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    for path in (p for p in listed if Path(p).name.startswith("redact") and p.endswith(".py")):
        source = subprocess.run(
            ["git", "-C", str(ROOT), "show", f"{ref}:{path}"], capture_output=True, text=True, check=True
        ).stdout
        (package / Path(path).name).write_text(source)
    sys.path.insert(0, str(package.parent))
    return importlib.import_module("peer_redact.redact")


def _pass(redact: Callable[[str], str], texts: list[str], forget: Callable[[], None]) -> float:
    forget()
    started = time.perf_counter()
    for text in texts:
        redact(text)
    return time.perf_counter() - started


def run(passes: int = 7, peer_ref: str = PEER_REF) -> None:
    peer = load_peer(peer_ref)
    texts = transcript_texts()
    peer_memo = getattr(peer, "_CLEAN", set())
    sides: dict[str, tuple[Callable[[str], str], Callable[[], None]]] = {
        "ours": (ours.redact, lambda: None),
        "peer": (peer.redact, peer_memo.clear),
    }
    rows = []
    for label, low, high in BUCKETS:
        group = [t for t in texts if low <= len(t) < high]
        times: dict[str, list[float]] = {"ours": [], "peer": []}
        for n in range(passes):
            order = ("ours", "peer") if n % 2 == 0 else ("peer", "ours")
            for side in order:
                redact, forget = sides[side]
                times[side].append(_pass(redact, group, forget))
        ours_s, peer_s = median(times["ours"]), median(times["peer"])
        chars = sum(map(len, group))
        rows.append(
            (
                label,
                f"{len(group):,}",
                f"{chars / 1e6:.2f}",
                ours_s * 1e6 / len(group),
                peer_s * 1e6 / len(group),
                ours_s * 1e3 / (chars / 1e6),
                peer_s * 1e3 / (chars / 1e6),
                f"{ours_s / peer_s:.2f}x",
            )
        )
    total = sum(map(len, texts))
    differ = sum(ours.redact(t) != peer.redact(t) for t in texts)
    table(
        f"redaction on {len(texts):,} transcript texts ({total / 1e6:.1f} MB), median of {passes} "
        f"interleaved passes; peer = {peer_ref}; texts whose result differs: {differ}",
        ["texts", "count", "MB", "ours µs/text", "peer µs/text", "ours ms/MB", "peer ms/MB", "ours / peer"],
        rows,
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--peer-ref", default=PEER_REF, help="git commit of the implementation to compare with"
    )
    parser.add_argument("--passes", type=int, default=7)
    args = parser.parse_args()
    run(args.passes, args.peer_ref)


if __name__ == "__main__":
    main()
