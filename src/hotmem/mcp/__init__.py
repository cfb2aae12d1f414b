"""The MCP server of a store (``hotmem mcp``): the ``mcp`` extra, loaded only by that command."""
