"""Where Claude Code keeps a project's transcripts: ``<config>/projects/<slug>/<session>.jsonl``
with ``<config>`` = ``$CLAUDE_CONFIG_DIR`` or ``~/.claude`` and ``<slug>`` = the project path
with every non-alphanumeric character replaced by ``-``."""

from __future__ import annotations

import os
import re
from pathlib import Path


def claude_config_dir() -> Path:
    configured = os.environ.get("CLAUDE_CONFIG_DIR")
    return Path(configured).expanduser() if configured else Path.home() / ".claude"


def project_slug(project_root: Path | str) -> str:
    return re.sub(r"[^A-Za-z0-9]", "-", str(project_root))


def transcripts_dir(project_root: Path | str) -> Path:
    return claude_config_dir() / "projects" / project_slug(project_root)


def live_transcript(project_root: Path | str) -> Path | None:
    """The newest ``.jsonl`` (by modification time) of the project, or None."""
    folder = transcripts_dir(project_root)
    if not folder.is_dir():
        return None
    candidates = [p for p in folder.glob("*.jsonl") if p.is_file()]
    return max(candidates, key=lambda p: p.stat().st_mtime) if candidates else None
