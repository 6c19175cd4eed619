"""An MCP server process (the SDK's MCPServer over stdio) whose tool asks for a form.

``python -m tests.mcp.booking_server LOG``: ``book_room(city)`` elicits the guest's name and
nights. The SDK sends the elicitation as the protocol negotiated says: an
``InputRequiredResult`` under 2026-07-28, an ``elicitation/create`` request before it. Each
time the tool body runs it appends what it received to LOG, one JSON line.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

from mcp.server.mcpserver import (
    AcceptedElicitation,
    Elicit,
    ElicitationResult,
    MCPServer,
    Resolve,
)
from pydantic import BaseModel


class Guest(BaseModel):
    name: str
    nights: int


def ask_guest(city: str) -> Elicit[Guest]:
    return Elicit(f"Who is staying in {city}, and for how many nights?", Guest)


def main(log: Path) -> None:
    server = MCPServer("booking")

    @server.tool()
    def book_room(city: str, guest: Annotated[ElicitationResult[Guest], Resolve(ask_guest)]) -> str:
        """Book a hotel room in a city; asks who stays."""
        if isinstance(guest, AcceptedElicitation):
            received = {"city": city, "action": "accept", **guest.data.model_dump()}
            reply = f"booked {guest.data.nights} nights in {city} for {guest.data.name}"
        else:
            received = {"city": city, "action": guest.action}
            reply = f"not booked: {guest.action}"
        with log.open("a") as out:
            out.write(json.dumps(received) + "\n")
        return reply

    server.run("stdio")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
