"""A transcript's key: the name its hand-off cursor and the record of an ask go by (standard
library only: the hooks' fast path reads it)."""

from __future__ import annotations

import hashlib
import os


def transcript_key(transcript: str | os.PathLike[str]) -> str:
    return hashlib.sha1(os.path.realpath(transcript).encode()).hexdigest()[:24]
