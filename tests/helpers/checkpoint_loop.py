"""Worker for the multi-process tests: checkpoint N times (or forever) and print each version.

Usage: python tests/helpers/checkpoint_loop.py PROJECT_DIR COUNT|forever TAG   (store from the environment)
"""

from __future__ import annotations

import sys

from infinite_context_brain.core.brain import ProjectBrain


def main() -> None:
    project, count, tag = sys.argv[1], sys.argv[2], sys.argv[3]
    with ProjectBrain.open(project) as brain:
        i = 0
        while count == "forever" or i < int(count):
            result = brain.checkpoint(
                f"Done: step {i} of worker {tag} in src/app.py. Decided: keep going with plan {i % 3}. "
                f"Current task: step {i + 1} of worker {tag}."
            )
            print(result.version, result.attempts, flush=True)
            i += 1


if __name__ == "__main__":
    main()
