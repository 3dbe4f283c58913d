"""``python -m infinite_context.server ...`` is the same as the ``infinite-context`` command."""

from .launch import main

raise SystemExit(main())
