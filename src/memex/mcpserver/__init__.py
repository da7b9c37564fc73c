"""`memex mcp`: memex as a Model Context Protocol server on stdio, for any agent that speaks MCP.

`server` declares the tools (each parses its arguments, calls one `Memex` method, renders); `pages` fits
their results to what an MCP client accepts. The `mcp` SDK is imported only by `memex mcp`.
"""
