"""Private folders and files: everything infinite-context creates is 0700 / 0600, whatever the
umask (cursors name transcripts, logs and the store hold the user's work).

``mkdir(mode=...)`` and ``open(..., mode)`` are filtered by the umask and ``parents=True`` gives
intermediate folders the default mode; these helpers set the mode explicitly instead.
"""

from __future__ import annotations

import contextlib
import os
import stat
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
