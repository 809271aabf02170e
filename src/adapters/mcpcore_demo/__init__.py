"""A demo MCP server (Streamable HTTP) for examples and tests."""
