"""The MCP server: Astralyx's bases and memories as tools for Claude Desktop, Claude Code, Cursor, any MCP client.

server.py builds the tools on the official `mcp` SDK over tools.py (the domain); http.py serves them at /mcp
on `astra serve`; stdio.py runs them for `astra mcp`.
"""
