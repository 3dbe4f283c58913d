"""The core of infinite-context: models, storage, merging and the ProjectBrain API.

No protocol code and no printing here; adapters in ``infinite_context_brain.server`` and
``infinite_context_brain.notebook`` translate their protocols to ``ProjectBrain`` calls.
"""

#: The name on PyPI. ``infinite-context`` there is an unrelated project (its import package is
#: ``infinite_context``, hence ours is ``infinite_context_brain``). Every install hint names this.
DISTRIBUTION = "infinite-context-brain"


def install_command(tool: str = "pip", *, upgrade: bool = False, extra: str = "") -> str:
    """The command that installs (or upgrades) this distribution with ``tool`` (pip, pipx)."""
    name = f"'{DISTRIBUTION}[{extra}]'" if extra else DISTRIBUTION
    if tool == "pipx":
        return f"pipx {'upgrade' if upgrade else 'install'} {DISTRIBUTION}"
    return f"pip install {'-U ' if upgrade else ''}{name}"
