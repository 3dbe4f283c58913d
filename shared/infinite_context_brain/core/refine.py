"""Background refinement: a detached process replaces the offline merge of a checkpoint with the
LLM chain's merge, so hooks, editors and notebooks never wait for a provider.

The job (the parent's effective settings, serialized whole, and the checkpoint's facts) travels
on the child's stdin: nothing is written to disk, keys included, and the child sees exactly the
settings the parent used even when they came from LSP initializationOptions or CLI flags.
Entry point: ``python -m infinite_context_brain.core.refine`` (its stderr goes to
``<data dir>/refine/refine.log``).
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from typing import TYPE_CHECKING, Any

from .files import open_private, private_dir

if TYPE_CHECKING:
    from .brain import ProjectBrain
    from .config import Settings
    from .facts import ContextFacts

log = logging.getLogger(__name__)


def settings_payload(settings: Settings) -> dict[str, Any]:
    """Every setting as JSON, secrets as their values (the pipe is private to the child). Only
    the fields the dump keeps: the raw ``seed_*`` inputs (a key inherited from Claude Code that
    the settings chose to ignore) stay behind."""
    data: dict[str, Any] = settings.model_dump(mode="json")
    for name in data:
        secret = getattr(getattr(settings, name), "get_secret_value", None)
        if secret is not None:
            data[name] = secret()
    data["data_dir"] = str(settings.resolved_data_dir())
    return data


def spawn_refinement(brain: ProjectBrain, version: int, facts: ContextFacts, token_count: int | None) -> int:
    """Start the refiner detached from this process (own session); returns its pid."""
    import orjson

    folder = brain.settings.resolved_data_dir() / "refine"
    private_dir(folder)
    job = {
        "project_root": str(brain.project.root),
        "version": version,
        "token_count": token_count,
        "settings": settings_payload(brain.settings),
        "facts": facts.model_dump(mode="json"),
    }
    with os.fdopen(open_private(folder / "refine.log", os.O_WRONLY | os.O_APPEND), "ab") as log_file:
        proc = subprocess.Popen(
            [sys.executable, "-m", "infinite_context_brain.core.refine"],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=log_file,
            start_new_session=True,
            close_fds=True,
        )
    assert proc.stdin is not None
    try:
        proc.stdin.write(orjson.dumps(job))
        proc.stdin.close()
    except BrokenPipeError:  # the child died at start; its log says why
        log.warning("background refinement did not start", extra={"pid": proc.pid})
    return proc.pid


def run_job(raw: bytes) -> int:
    """Run one refinement job (the child's side); 0 on success or when no LLM tier succeeded."""
    import orjson

    from .brain import ProjectBrain
    from .config import Settings
    from .facts import ContextFacts
    from .logs import setup_logging

    job = orjson.loads(raw)
    settings = Settings(**job["settings"])
    setup_logging(settings.log_level)
    facts = ContextFacts.model_validate(job["facts"])
    with ProjectBrain.open(job["project_root"], settings) as brain:
        result = brain.refine(facts, int(job["version"]), job.get("token_count"))
    log.info(
        "refinement %s",
        f"stored v{result.version} ({result.merged_by})" if result else "kept the offline merge",
        extra={"base_version": job["version"]},
    )
    return 0


if __name__ == "__main__":
    sys.exit(run_job(sys.stdin.buffer.read()))
