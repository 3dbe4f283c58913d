"""``infinite-context proxy run|start|status|stop`` (the CLI adapter calls ``run_proxy``)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from . import process
from .config import resolve
from .status import status

if TYPE_CHECKING:
    from infinite_context_brain.core.config import Settings

Emit = Callable[[argparse.Namespace, Any, Callable[[], None]], None]


def run_proxy(args: argparse.Namespace, settings: Settings, emit: Emit) -> int:
    data_dir = settings.resolved_data_dir()
    action = args.proxy_command
    if action == "run":
        from .serve import serve  # uvicorn and httpx2 load only for the proxy itself

        return serve(data_dir, resolve(data_dir, args.port, args.upstream, settings), settings)
    if action == "start":
        found = process.start_detached(data_dir, resolve(data_dir, args.port, args.upstream, settings))
        found = status(data_dir)
    elif action == "stop":
        found = process.stop(data_dir)
        if found.running:
            sys.stderr.write(f"error: pid {found.pid} is still running\n")
            return 1
    else:
        found = status(data_dir)

    def human() -> None:
        if not found.running:
            extra = "" if found.installed else " (live endless mode not installed)"
            print(("stopped" if action == "stop" else "not running") + extra)
            return
        print(f"running: pid {found.pid}, {found.url} -> {found.upstream}")
        if found.problem:
            print(f"problem: {found.problem}")
        figures = found.figures or {}
        before, after = int(figures.get("tokens_before", 0)), int(figures.get("tokens_after", 0))
        if before:
            share = 1 - after / before
            print(
                f"requests {figures.get('requests', 0)}, transformed {figures.get('transformed', 0)}, "
                f"epochs {figures.get('epochs', 0)}; "
                f"tool-result tokens {before:,} -> {after:,} ({share:.0%} less)"
            )

    emit(args, asdict(found), human)
    return 0
