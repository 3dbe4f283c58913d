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


def all_transcripts(project_root: Path | str) -> list[Path]:
    """The project's session transcripts, newest (by modification time) first. Claude Code keys
    them on the folder it was started in: the given folder, else the project's root above it."""
    from ..project import find_root

    start = Path(project_root).expanduser().absolute()
    found: list[Path] = []
    for folder in dict.fromkeys([transcripts_dir(start), transcripts_dir(find_root(start))]):
        if folder.is_dir():
            found += [p for p in folder.glob("*.jsonl") if p.is_file()]
    return sorted(found, key=lambda p: p.stat().st_mtime, reverse=True)


def live_transcript(project_root: Path | str) -> Path | None:
    """The newest ``.jsonl`` of the project (the session being written), or None."""
    found = all_transcripts(project_root)
    return found[0] if found else None
