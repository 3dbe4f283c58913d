"""The core of infinite-context: models, storage, merging and the ProjectBrain API.

No protocol code and no printing here; adapters in ``infinite_context.server`` and
``infinite_context.notebook`` translate their protocols to ``ProjectBrain`` calls.
"""
