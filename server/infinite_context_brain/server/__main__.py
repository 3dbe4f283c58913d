"""``python -m infinite_context_brain.server ...`` is the same as the ``infinite-context`` command."""

from .launch import main

raise SystemExit(main())
