"""Run every benchmark and print its table: `make bench` (or `python benchmarks/run.py --quick`).

Figures are relative where a peer exists (ratios beat absolute times on noisy machines).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import console, scratch

#: "first-call": the start-up figures of "memory" alone (the first call after `initialize`)
GROUPS = [
    "mcp",
    "store",
    "transcript",
    "redact",
    "hooks",
    "merge",
    "resume",
    "freetext",
    "memory",
    "first-call",
    "lsp",
    "proxy",
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer repetitions (smoke run)")
    parser.add_argument("--show", action="store_true", help="resume, freetext: print what each point missed")

    parser.add_argument(
        "--only",
        choices=GROUPS,
        help="run one group",
    )
    parser.add_argument(
        "--levels", type=int, nargs="+", help="memory: item counts to measure (default 1k 10k 100k)"
    )
    parser.add_argument("--backends", nargs="+", choices=["sqlite", "redis"], help="memory: backends to run")
    args = parser.parse_args()
    store_url = f"sqlite:///{Path(scratch('ic-bench-store-')) / 'brain.db'}"
    console.print(f"store: {store_url}")

    if args.only in (None, "mcp"):
        import mcp_bench

        mcp_bench.cold_start(5 if args.quick else 20, store_url)
        mcp_bench.calls(30 if args.quick else 200, store_url)

    if args.only in (None, "store"):
        import store_bench

        fresh = f"sqlite:///{Path(scratch('ic-bench-store-')) / 'brain.db'}"
        store_bench.run(30 if args.quick else 200, fresh)

    if args.only in (None, "transcript"):
        import transcript_bench

        fresh = f"sqlite:///{Path(scratch('ic-bench-store-')) / 'brain.db'}"
        transcript_bench.run(args.quick, fresh)

    if args.only in (None, "redact"):
        import redact_bench

        redact_bench.run(3 if args.quick else 7)

    if args.only in (None, "proxy"):
        import proxy_bench

        proxy_bench.run(args.quick)

    if args.only in (None, "hooks"):
        import hooks_bench

        fresh = f"sqlite:///{Path(scratch('ic-bench-store-')) / 'brain.db'}"
        hooks_bench.run(10 if args.quick else 30, fresh)
        hooks_bench.in_claude_code(3 if args.quick else 7)

    if args.only in (None, "memory"):
        import memory_bench
        import store_bench

        with store_bench.redis_server() as redis_url:
            memory_bench.run(redis_url, quick=args.quick, levels=args.levels, backends=args.backends)

    if args.only == "first-call":
        import memory_bench
        import store_bench

        with store_bench.redis_server() as redis_url:
            memory_bench.first_calls(redis_url, 5 if args.quick else 15)

    if args.only in (None, "lsp"):
        import lsp_bench

        fresh = f"sqlite:///{Path(scratch('ic-bench-store-')) / 'brain.db'}"
        lsp_bench.run(args.quick, fresh)

    if args.only in (None, "merge"):
        import merge_quality

        merge_quality.run()

    if args.only in (None, "resume"):
        import resume_quality

        resume_quality.run(show=args.show)

    if args.only in (None, "freetext"):
        import freetext_quality

        freetext_quality.run(show=args.show, surfaces=["cli", "mcp"] if args.quick else None)


if __name__ == "__main__":
    main()
