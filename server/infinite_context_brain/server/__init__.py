"""Process entry points (CLI, MCP stdio server); they translate protocols to ProjectBrain calls."""

from infinite_context_brain.core import DISTRIBUTION


def package_version() -> str:
    """The installed distribution's version (servers report it to their clients)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(DISTRIBUTION)
    except PackageNotFoundError:
        return "0+unknown"
