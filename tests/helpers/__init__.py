"""What the tests share besides fixtures: the real Claude Code CLI in a throwaway project
(``claude_session``), our MCP server through the real MCP client (``mcp_client``), our language
server through pytest-lsp (``lsp_client``), scripted fakes of the providers' HTTP APIs
(``fake_anthropic``, ``fake_providers``), the proxy run as a process and an impostor on its port
(``proxy_run``), raw JSON-RPC over a server's stdio (``raw_stdio``), throwaway Redis servers and
clusters (``redis_servers``) and the multi-process checkpoint worker (``checkpoint_loop``, run as a
script)."""
