"""A real MCP server over stdio (the mcp SDK's MCPServer) with one tool, for the MCP approval tests.

Run as a script, it serves ``issue_refund``; each call appends a line to the file named by the
``REFUNDS_FILE`` environment variable, so the test sees what the server really ran.
"""

from __future__ import annotations

import os

from mcp.server.mcpserver import MCPServer

server = MCPServer("refunds")


@server.tool()
def issue_refund(order_id: str, amount: int) -> str:
    """Refund an order."""
    with open(os.environ["REFUNDS_FILE"], "a") as out:
        out.write(f"{order_id} {amount}\n")
    return f"refunded {amount} on {order_id}"


if __name__ == "__main__":
    server.run("stdio")
