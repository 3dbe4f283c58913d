"""Where the tests' Claude Code helpers live, for the benchmarks that drive the real CLI."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def claude_available() -> bool:
    return (ROOT / "tools" / "node_modules" / ".bin" / "claude").exists()
