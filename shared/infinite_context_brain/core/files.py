"""Private folders and files: everything infinite-context creates is 0700 / 0600, whatever the
umask (cursors name transcripts, logs and the store hold the user's work); and what it finds is
used only when it is the user's own (``foreign``, ``owned_dir``): a data folder or hook queue
another user made first, or can write, would let them plant work for this user's processes.

``mkdir(mode=...)`` and ``open(..., mode)`` are filtered by the umask and ``parents=True`` gives
intermediate folders the default mode; these helpers set the mode explicitly instead.

Standard library only: the hook queue checks its folder with it on every tool call.
"""

from __future__ import annotations

import contextlib
import os
import stat

#: ``typing.TYPE_CHECKING`` without importing ``typing`` (this module is on every hook's path)
TYPE_CHECKING = False

if TYPE_CHECKING:
    from pathlib import Path

DIR_MODE = 0o700
FILE_MODE = 0o600


def private_dir(path: Path) -> Path:
    """Create ``path`` and any missing parents as 0700 (existing folders are left as they are,
    except ``path`` itself when we own it)."""
    missing: list[Path] = []
    folder = path
    while not folder.exists():
        missing.append(folder)
        folder = folder.parent
    for created in reversed(missing):
        with contextlib.suppress(FileExistsError):  # another process made it meanwhile
            created.mkdir(mode=DIR_MODE)
        os.chmod(created, DIR_MODE)
    tighten(path, DIR_MODE)
    return path


def tighten(path: Path, mode: int) -> None:
    """Drop group/other permission bits of ``path`` if we own it (an older version or a loose
    umask may have created it 0644 / 0755)."""
    try:
        info = path.stat()
        if info.st_uid == os.getuid() and stat.S_IMODE(info.st_mode) & 0o077:
            os.chmod(path, stat.S_IMODE(info.st_mode) & ~0o077 & (mode | 0o700))
    except OSError:
        pass


def open_private(path: Path, flags: int) -> int:
    """``os.open`` with 0600 for a new file and an existing one tightened; returns the fd."""
    fd = os.open(path, flags | os.O_CREAT, FILE_MODE)
    try:
        info = os.fstat(fd)
        if info.st_uid == os.getuid() and stat.S_IMODE(info.st_mode) & 0o077:
            os.fchmod(fd, FILE_MODE)
    except OSError:
        pass
    return fd


class NotOwned(Exception):
    """A file or folder that another user owns or can write: never used."""


def foreign(info: os.stat_result) -> str | None:
    """Why a file or folder with ``info`` is not the user's own (None: it is)."""
    if info.st_uid != os.getuid():
        return f"owned by uid {info.st_uid}, not you (uid {os.getuid()})"
    if stat.S_IMODE(info.st_mode) & 0o022:
        return f"writable by others (mode {stat.S_IMODE(info.st_mode):o})"
    return None


def owned_dir(path: str | Path, *, create: bool = False) -> str:
    """``path``, a folder of the user's own that no one else can write; created 0700 (with its
    missing parents) when asked. Raises ``NotOwned`` otherwise (FileNotFoundError when it is
    missing and not to be created)."""
    path = str(path)
    if create and not os.path.isdir(path):
        os.makedirs(path, mode=DIR_MODE, exist_ok=True)
    info = os.stat(path)
    if not stat.S_ISDIR(info.st_mode):
        raise NotOwned(f"{path} is not a folder")
    problem = foreign(info)
    if problem is not None:
        raise NotOwned(f"{path} is {problem}; infinite-context does not use it")
    return path
