"""Project identity: which brain a folder belongs to.

The nearest ``.claude_session_id`` upward from the working folder wins (so a sub-folder, a
notebook or a VS Code workspace folder inside a project share its brain); otherwise the git top
level; otherwise the folder itself. The id file is created there, holding a UUID, on first use.
Every entry point (CLI, MCP, LSP, hooks, notebook) resolves through ``resolve_project``.
"""

from __future__ import annotations

import os
import uuid
from dataclasses import dataclass
from pathlib import Path

from .errors import InvalidInput, StorageUnavailable

SESSION_FILE = ".claude_session_id"


@dataclass(frozen=True)
class Project:
    root: Path
    session_id: str

    def contains(self, path: Path) -> bool:
        try:
            path.resolve().relative_to(self.root)
        except ValueError:
            return False
        return True


def _find_upward(start: Path, name: str) -> Path | None:
    for folder in (start, *start.parents):
        if (folder / name).exists():
            return folder
    return None


def _read_session_id(path: Path) -> str | None:
    try:
        text = path.read_text(encoding="utf-8").strip()
    except OSError:
        return None
    # Accept any non-empty single-line id (the seed wrote UUIDs; users may write a name).
    first = text.splitlines()[0].strip() if text else ""
    return first if first and len(first) <= 200 and all(c.isprintable() for c in first) else None


def find_root(start: Path) -> Path:
    """The folder a brain is keyed on, without creating anything."""
    start = start.expanduser().resolve()
    if start.is_file():
        start = start.parent
    marked = _find_upward(start, SESSION_FILE)
    if marked is not None:
        return marked
    git_top = _find_upward(start, ".git")
    return git_top if git_top is not None else start


def resolve_project(start: Path | str | None = None, *, create: bool = True) -> Project:
    """Resolve (and on first use create) the project identity for ``start`` (default: cwd).

    ``PROJECT_ROOT`` / ``--project`` reach here as ``start``; callers pass them explicitly.
    """
    raw = Path(start) if start is not None else Path(os.getcwd())
    if not raw.expanduser().exists():
        raise InvalidInput(
            "project", f"folder {raw} does not exist", fix="pass an existing folder to --project"
        )
    root = find_root(raw)
    id_file = root / SESSION_FILE
    session_id = _read_session_id(id_file) if id_file.exists() else None
    if session_id is None:
        if not create:
            return Project(root=root, session_id="")
        session_id = _publish_session_id(id_file, str(uuid.uuid4()))
    return Project(root=root, session_id=session_id)


def _publish_session_id(id_file: Path, candidate: str) -> str:
    """Create ``id_file`` holding ``candidate`` unless another process got there first; return
    the id that won. The file appears complete or not at all (written aside, then hard-linked,
    which fails if the name exists), so a concurrent reader never sees it empty."""
    tmp = id_file.with_name(f"{id_file.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")
    try:
        tmp.write_text(candidate + "\n", encoding="utf-8")
        os.chmod(tmp, 0o644)
        try:
            os.link(tmp, id_file)
            return candidate
        except FileExistsError:
            pass
    except OSError as exc:
        raise StorageUnavailable(
            f"cannot create {id_file}: {exc.strerror}",
            fix="make the project folder writable or pass --project to another folder",
        ) from None
    finally:
        tmp.unlink(missing_ok=True)
    existing = _read_session_id(id_file)
    if existing is None:
        raise StorageUnavailable(
            f"{id_file} exists but holds no usable session id",
            fix=f"delete {id_file} (a new id is created) or write one line with the id",
        )
    return existing
