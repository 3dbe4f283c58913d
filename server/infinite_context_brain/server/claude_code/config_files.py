"""Claude Code's configuration files, read and written carefully.

Where Claude Code reads our entries (verified with the CLI, 2.1.x):

=========  ==========================================  ==========================================
scope      MCP server                                  hooks (and ``env``)
=========  ==========================================  ==========================================
project    ``<project>/.mcp.json`` ``mcpServers``      ``<project>/.claude/settings.json``
local      ``<config>.json`` ``projects[<abs>]``       ``<project>/.claude/settings.local.json``
user       ``<config>.json`` ``mcpServers``            ``<config dir>/settings.json``
=========  ==========================================  ==========================================

``<config>.json`` is ``$CLAUDE_CONFIG_DIR/.claude.json`` when that variable is set, else
``~/.claude.json``; ``<config dir>`` is ``$CLAUDE_CONFIG_DIR`` or ``~/.claude``. The variable
reaches here as ``Settings.claude_config_dir`` (callers pass it; nothing here reads the
environment).

Writing never goes through a symlink (a file or backup that is a link is refused, naming it),
never replaces a read-only file, and is atomic (a temporary file renamed over the old one).
Before its first change, a file that was there is kept as ``<file>.infinite-context.bak``.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any, Literal

from infinite_context_brain.core.errors import InvalidInput

Scope = Literal["project", "local", "user"]
SCOPES: tuple[Scope, ...] = ("project", "local", "user")
BACKUP_SUFFIX = ".infinite-context.bak"


def config_json(claude_config_dir: Path | None) -> Path:
    """Claude Code's main config file, given ``CLAUDE_CONFIG_DIR`` (None: not set)."""
    if claude_config_dir is not None:
        return claude_config_dir.expanduser() / ".claude.json"
    return Path.home() / ".claude.json"


def user_dir(claude_config_dir: Path | None) -> Path:
    """Claude Code's data folder: ``CLAUDE_CONFIG_DIR`` or ``~/.claude``."""
    return claude_config_dir.expanduser() if claude_config_dir is not None else Path.home() / ".claude"


def settings_file(scope: Scope, project: Path, config_dir: Path | None) -> Path:
    """The settings file (hooks, ``env``) of ``scope``."""
    if scope == "user":
        return user_dir(config_dir) / "settings.json"
    name = "settings.json" if scope == "project" else "settings.local.json"
    return project / ".claude" / name


def mcp_file(scope: Scope, project: Path, config_dir: Path | None) -> Path:
    """The file holding the MCP server entry of ``scope``."""
    return project / ".mcp.json" if scope == "project" else config_json(config_dir)


def backup_of(path: Path) -> Path:
    return path.with_name(path.name + BACKUP_SUFFIX)


def read_json(path: Path) -> dict[str, Any]:
    """The JSON object in ``path`` ({} when there is none); a file that is not one is refused."""
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8") or "{}")
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InvalidInput(
            str(path), f"is not valid JSON ({exc})", fix="fix or move the file, then run install again"
        ) from None
    if not isinstance(data, dict):
        raise InvalidInput(str(path), "does not hold a JSON object", fix="fix or move the file")
    return data


def check_writable(path: Path) -> None:
    """Refuse to write ``path`` (or its backup) through a symlink, or to replace a read-only file."""
    for target in (path, backup_of(path)):
        if target.is_symlink():
            raise InvalidInput(
                str(target),
                f"is a symlink (to {os.readlink(target)}); infinite-context does not write through links",
                fix=f"replace {target} with a regular file (or remove it), then run install again",
            )
    try:
        mode = path.lstat().st_mode
    except FileNotFoundError:
        return
    if not stat.S_ISREG(mode):
        raise InvalidInput(str(path), "is not a regular file", fix="move it away, then run install again")
    if not mode & stat.S_IWUSR:
        raise InvalidInput(
            str(path),
            "is read-only; infinite-context does not replace it",
            fix=f"make it writable (chmod u+w {path}) or add the entries by hand, then run install again",
        )


def _write_new(path: Path, data: bytes, mode: int) -> None:
    """Create ``path`` (never through a symlink) holding ``data``; an old regular file is replaced.
    Nothing is left behind when writing fails."""
    if path.exists() and not path.is_symlink():
        path.unlink()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.chmod(path, mode)
    except BaseException:
        path.unlink(missing_ok=True)
        raise


def write_json(path: Path, data: dict[str, Any], *, back_up: bool = True) -> str | None:
    """Write ``data`` atomically; before the first change to a file that was there, keep its
    original as ``<file>.infinite-context.bak`` (a later change keeps that first backup).
    Returns the backup made now, if any."""
    check_writable(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = path.lstat().st_mode & 0o777 if path.exists() else 0o644
    backup = backup_of(path)
    made = None
    if back_up and path.exists() and not backup.exists():
        _write_new(backup, path.read_bytes(), mode)
        made = str(backup)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    _write_new(tmp, (json.dumps(data, indent=2, ensure_ascii=False) + "\n").encode(), mode)
    tmp.replace(path)  # rename replaces the name itself, never a link's target
    return made


def remove_backup(path: Path) -> str | None:
    """Remove ``path``'s install backup (a regular file only); returns it when removed."""
    backup = backup_of(path)
    if backup.is_file() and not backup.is_symlink():
        backup.unlink()
        return str(backup)
    return None
