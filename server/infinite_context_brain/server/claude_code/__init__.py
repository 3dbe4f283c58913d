"""Claude Code integration: the hook handlers and their spool, the MCP hook tool, the installer and
its health checks."""
