"""mcpcore's benchmark against the official MCP Python SDK client and fastmcp (issue 9)."""
