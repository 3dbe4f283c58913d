"""The spool's worker: ``python -m infinite_context_brain.server.claude_code.worker <folder>``,
started detached by a deferred hook when none is alive (``spool.ensure_worker``); it runs the
queued records with the hook handlers (``hooks.run_record``) and leaves when the queue is empty."""

from __future__ import annotations

import sys

from .hooks import worker_main

if __name__ == "__main__":
    raise SystemExit(worker_main(sys.argv[1:]))
