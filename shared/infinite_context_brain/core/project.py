"""Project identity: which folder a surface works in, and which brain that folder belongs to.

Two steps, each written once. ``locate_project`` picks the working folder (an explicit folder,
``PROJECT_ROOT``, ``CLAUDE_PROJECT_DIR``, the client's cwd, the process cwd: see its docstring).
``resolve_project`` turns it into an identity: the nearest ``.claude_session_id`` upward wins (so
a sub-folder, a notebook or a VS Code workspace folder inside a project share its brain);
otherwise the git top level; otherwise the folder itself. The id file is created there, holding a
UUID, on the first write to the brain (``ProjectBrain`` resolves with ``create=False`` and
creates it when it first writes); reads, doctor and an editor opening a folder create nothing.
Every entry point (CLI, MCP, LSP, hooks, notebook) goes through both, usually via
``ProjectBrain.open``.
"""

from __future__ import annotations

import errno
import os
import re
import stat
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from .errors import InvalidInput, StorageUnavailable

if TYPE_CHECKING:
    from .config import Settings

SESSION_FILE = ".claude_session_id"


@dataclass(frozen=True)
class Project:
    root: Path
    session_id: str
    #: the folder the identity was resolved from (``locate_project``'s answer): Claude Code keys
    #: its transcripts on it, which may be a sub-folder of ``root``
    folder: Path | None = field(default=None, compare=False)

    def contains(self, path: Path) -> bool:
        try:
            path.resolve().relative_to(self.root)
        except ValueError:
            return False
        return True


def _find_upward(start: Path, name: str) -> Path | None:
    for folder in (start, *start.parents):
        if os.path.lexists(folder / name):  # a link counts as there (and is refused when read)
            return folder
    return None


SESSION_FILE_MAX_BYTES = 4096
#: what a session id may be: it names the brain in every store key and is shown to the model, so
#: only a short run of safe characters (a UUID when we create it; a user may write a name)
SESSION_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
SESSION_ID_RULE = "one line of at most 64 letters, digits, '.', '_' or '-'"


def _read_session_id(path: Path) -> tuple[str | None, str]:
    """(the id in ``path``, or None and why not). Only a small regular file is read, opened
    without following a link (a repository may ship the name as a link to a credential file)
    and without blocking (a FIFO would hang, ``/dev/zero`` never ends)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return None, "is a symbolic link; infinite-context never follows it"
        return None, f"cannot be read ({exc.strerror})"
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None, "is not a regular file"
        raw = os.read(fd, SESSION_FILE_MAX_BYTES + 1)
    except OSError as exc:
        return None, f"cannot be read ({exc.strerror})"
    finally:
        os.close(fd)
    if len(raw) > SESSION_FILE_MAX_BYTES:
        return None, f"is larger than {SESSION_FILE_MAX_BYTES} bytes"
    try:
        text = raw.decode("utf-8").strip()
    except UnicodeDecodeError:
        return None, "is not UTF-8 text"
    first = text.splitlines()[0].strip() if text else ""
    if not SESSION_ID.fullmatch(first):
        return None, f"does not hold a session id ({SESSION_ID_RULE})"
    return first, ""


def find_root(start: Path) -> Path:
    """The folder a brain is keyed on, without creating anything.

    A ``.claude_session_id`` in a parent folder is adopted only inside the same git repository
    (at or below its top level): a stray id file in a home folder must not capture every
    project under it. Outside any repository only the folder's own id file counts."""
    start = start.expanduser().resolve()
    if start.is_file():
        start = start.parent
    git_top = _find_upward(start, ".git")
    marked = _find_upward(start, SESSION_FILE)
    if marked is not None and (marked == start or (git_top is not None and marked.is_relative_to(git_top))):
        return marked
    return git_top if git_top is not None else start


def locate_project(
    explicit: Path | str | None, settings: Settings, client_cwd: Path | str | None = None
) -> Path:
    """The folder a surface works in; ``resolve_project`` finds its brain from there.

    Precedence, highest first (the only place it is decided):

    1. ``explicit``: the folder the surface was handed: the CLI's ``--project`` (hook commands
       too), the language server's workspace folder, the notebook's folder or the magic's
       ``--project``, ``ProjectBrain.open(project_dir)``;
    2. ``settings.project_root`` (``PROJECT_ROOT`` / ``INFINITE_CONTEXT_PROJECT_ROOT``);
    3. ``settings.claude_project_dir`` (``CLAUDE_PROJECT_DIR``: the project Claude Code runs its
       hooks and MCP servers for);
    4. ``client_cwd``: the working folder the client reported (a hook payload's ``cwd``);
    5. this process's working folder.

    1 and 2 are the user's own words: a folder that does not exist is an error naming it. 3 and 4
    come from Claude Code and are passed over when they are not folders, so a hook never fails on
    them. The answer is absolute but not resolved through symlinks (Claude Code keys transcripts
    on the path as it sees it). Adapters that put an explicit folder into ``Settings`` (the CLI's
    ``--project``, the language server's folder) get the same order: explicit Settings values win
    over the environment there.
    """
    chosen: Path | None = None
    for given, name in ((explicit, "project"), (settings.project_root, "project_root")):
        if given is not None and str(given).strip():
            chosen = Path(given).expanduser()
            if not chosen.is_dir():
                raise InvalidInput(
                    name,
                    f"{chosen} is not a folder" if chosen.exists() else f"folder {chosen} does not exist",
                    fix="pass an existing folder (--project, PROJECT_ROOT or INFINITE_CONTEXT_PROJECT_ROOT)",
                )
            break

    if chosen is None:
        for offered in (settings.claude_project_dir, client_cwd):
            if offered is not None and str(offered).strip() and Path(offered).expanduser().is_dir():
                chosen = Path(offered).expanduser()
                break
    return (chosen or Path(os.getcwd())).absolute()


def resolve_project(start: Path | str | None = None, *, create: bool = True) -> Project:
    """Resolve (and on first use create) the project identity for ``start`` (default: cwd).

    ``start`` is normally ``locate_project``'s answer.
    """
    raw = Path(start) if start is not None else Path(os.getcwd())
    if not raw.expanduser().exists():
        raise InvalidInput(
            "project", f"folder {raw} does not exist", fix="pass an existing folder to --project"
        )
    folder = raw.expanduser().absolute()
    root = find_root(raw)
    id_file = root / SESSION_FILE
    session_id = _read_session_id(id_file)[0] if os.path.lexists(id_file) else None
    if session_id is None:
        if not create:
            return Project(root=root, session_id="", folder=folder)
        session_id = _publish_session_id(id_file, str(uuid.uuid4()))
    return Project(root=root, session_id=session_id, folder=folder)


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
    existing, problem = _read_session_id(id_file)
    if existing is None:
        raise StorageUnavailable(
            f"{id_file} {problem}",
            fix=f"delete {id_file} (a new id is created) or make it a file holding {SESSION_ID_RULE}",
        )
    return existing
