"""Process entry points (CLI, MCP stdio server); they translate protocols to ProjectBrain calls."""
