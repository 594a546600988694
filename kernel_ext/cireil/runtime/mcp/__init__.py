"""A Streamable HTTP MCP client, tools only (spec "HTTP MCP tools"; notes in shared/reference/mcp-http.md).

httpx is imported only by the transport, and the transport only when an agent has MCP servers.
"""
