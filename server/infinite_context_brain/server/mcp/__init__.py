"""MCP stdio server (mcp 2.x ``MCPServer``): tools, prompts and a resource over ProjectBrain."""
