"""`infinite-context memory ...`: the working-memory commands (one WorkingMemory call each)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from infinite_context_brain.core.errors import InvalidInput

from ..text import compaction_text, memory_line
from .source import read_text

if TYPE_CHECKING:
    from rich.console import Console

    from infinite_context_brain.core.config import Settings


def run_memory(
    args: argparse.Namespace,
    load: Callable[..., Settings],
    emit: Callable[..., None],
    console: Callable[[], Console],
) -> int:
    import json

    from infinite_context_brain.core.brain import ProjectBrain

    settings = load(args, budget=args.budget)
    action = args.memory_command
    # Read before the store opens: a missing text stops the command with nothing touched.
    example = "infinite-context memory store 'Error: redis timed out'"
    text = read_text(args, "the text to remember", example) if action == "store" else ""
    with ProjectBrain.open(settings=settings) as brain:
        memory = brain.memory()
        if action == "store":
            item, report = memory.store_item(
                content=text,
                summary=args.summary,
                tags=args.tags,
                importance=args.importance,
                pinned=args.pin,
            )
            result: object = {"item": item, "compaction": report}
            human = f"Stored {item.id} ({item.content_type}, {item.tokens} tokens).{compaction_text(report)}"
        elif action == "query":
            hits = memory.query(" ".join(args.words), args.limit, args.tags, args.archived)
            result = {"items": hits}
            human = "\n".join(f"{memory_line(h.item)} (score {h.score})" for h in hits) or "No match."
        elif action == "list":
            items = memory.list_items(args.offset, args.limit, args.archived)
            result = {"items": items}
            human = "\n".join(memory_line(i) for i in items) or "No items."
        elif action == "compact":
            report = memory.compact(args.target)
            result = report
            human = compaction_text(report).strip() + f" ({report.duration_ms:.0f} ms)"
        elif action == "export":
            data = memory.export(args.summaries_only)
            sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
            return 0
        else:
            raw = sys.stdin.read() if args.file == "-" else _read_file(args.file)
            try:
                parsed = json.loads(raw)
            except json.JSONDecodeError as exc:
                raise InvalidInput(
                    args.file, f"is not JSON ({exc.msg})", fix="pass the output of `memory export`"
                ) from None
            count = memory.import_items(parsed, replace=args.replace)
            result = {"imported": count}
            human = f"Imported {count} items."
    emit(args, result, lambda: console().print(human, markup=False))
    return 0


def _read_file(name: str) -> str:
    try:
        return Path(name).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInput(name, f"cannot be read ({exc})", fix="pass a readable UTF-8 file") from None
