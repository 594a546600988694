"""A Streamable HTTP MCP client, tools only (spec "HTTP MCP tools"; notes in shared/reference/mcp-http.md).

The transport speaks HTTP/1.1 itself (h1.py) and is imported only when an agent has MCP servers; httpx
then parses the URL and makes the TLS context, and carries requests only when proxy settings apply.
"""
