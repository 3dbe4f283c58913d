"""Where Claude Code keeps a project's transcripts: ``<config>/projects/<slug>/<session>.jsonl``
with ``<config>`` = ``Settings.claude_config_dir`` (``$CLAUDE_CONFIG_DIR``) or ``~/.claude`` and
``<slug>`` = the project path with every non-alphanumeric character replaced by ``-``.

Callers that hold Settings pass ``settings.resolved_claude_config_dir()``; without it the folder
comes from a fresh ``load_settings()`` (never from the environment directly).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..config import Settings


def claude_config_dir(settings: Settings | None = None) -> Path:
    if settings is None:
        from ..config import load_settings

        settings = load_settings()
    return settings.resolved_claude_config_dir()


def project_slug(project_root: Path | str) -> str:
    return re.sub(r"[^A-Za-z0-9]", "-", str(project_root))


def transcripts_dir(project_root: Path | str, config_dir: Path | None = None) -> Path:
    return (config_dir or claude_config_dir()) / "projects" / project_slug(project_root)


def all_transcripts(project_root: Path | str, config_dir: Path | None = None) -> list[Path]:
    """The project's session transcripts, newest (by modification time) first. Claude Code keys
    them on the folder it was started in: the given folder, else the project's root above it."""
    from ..project import find_root

    config_dir = config_dir or claude_config_dir()
    start = Path(project_root).expanduser().absolute()
    found: list[Path] = []
    for folder in dict.fromkeys(
        [transcripts_dir(start, config_dir), transcripts_dir(find_root(start), config_dir)]
    ):
        if folder.is_dir():
            found += [p for p in folder.glob("*.jsonl") if p.is_file()]
    return sorted(found, key=lambda p: p.stat().st_mtime, reverse=True)


def live_transcript(project_root: Path | str, config_dir: Path | None = None) -> Path | None:
    """The newest ``.jsonl`` of the project (the session being written), or None."""
    found = all_transcripts(project_root, config_dir)
    return found[0] if found else None
