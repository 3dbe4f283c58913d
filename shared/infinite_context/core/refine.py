"""Background refinement: a detached ``infinite-context refine`` process replaces the offline
merge of a checkpoint with the LLM chain's merge, so hooks and editors never wait for a
provider. The context travels in a 0600 file under the data dir that the refiner deletes.
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .brain import ProjectBrain


def spawn_refinement(brain: ProjectBrain, version: int, context: str, token_count: int | None) -> int:
    """Start the refiner detached from this process (own session, no stdio); returns its pid."""
    folder = brain.settings.resolved_data_dir() / "refine"
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    path = folder / f"{uuid.uuid4().hex}.txt"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(context)
    command = [
        sys.executable, "-m", "infinite_context.server", "--project", str(brain.project.root),
        "refine", "--version", str(version), "--context-file", str(path),
    ]  # fmt: skip
    if token_count is not None:
        command += ["--tokens", str(token_count)]
    log_path = folder / "refine.log"
    env = dict(os.environ)
    env.update(settings_environment(brain))
    with open(log_path, "ab") as log_file:
        proc = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=log_file,
            start_new_session=True,
            close_fds=True,
            env=env,
        )
    return proc.pid


def settings_environment(brain: ProjectBrain) -> dict[str, str]:
    """The parent's effective settings as environment variables, so the refiner matches it even
    when they came from explicit values (LSP initializationOptions, CLI flags)."""
    s = brain.settings
    env = {
        "INFINITE_CONTEXT_DATA_DIR": str(s.resolved_data_dir()),
        "INFINITE_CONTEXT_MERGE": s.merge,
        "INFINITE_CONTEXT_GEMINI_MODEL": s.gemini_model,
        "INFINITE_CONTEXT_ANTHROPIC_MODEL": s.anthropic_model,
        "INFINITE_CONTEXT_STATE_TOKEN_CAP": str(s.state_token_cap),
        "INFINITE_CONTEXT_HISTORY_SIZE": str(s.history_size),
        "INFINITE_CONTEXT_MERGE_TIMEOUT_SECONDS": str(s.merge_timeout_seconds),
        "INFINITE_CONTEXT_REDIS_PREFIX": s.redis_prefix,
    }
    optional = {
        "INFINITE_CONTEXT_STORE_URL": s.store_url,
        "INFINITE_CONTEXT_GEMINI_BASE_URL": s.gemini_base_url,
        "INFINITE_CONTEXT_ANTHROPIC_BASE_URL": s.anthropic_base_url,
        "GEMINI_API_KEY": s.gemini_api_key.get_secret_value() if s.gemini_api_key else None,
        "ANTHROPIC_API_KEY": s.anthropic_api_key.get_secret_value() if s.anthropic_api_key else None,
    }
    env.update({k: v for k, v in optional.items() if v})
    return env


def read_context_file(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    finally:
        path.unlink(missing_ok=True)
