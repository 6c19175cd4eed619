"""The README's A2A server, run as its own process: ``python -m tests.a2a.refund_server``.

It binds a free loopback port, prints it on the first line of stdout, then serves. With
``--tokens JSON`` (``{"token": "person"}``), the README's graph is served by an app that names
each request's person by its bearer token.
"""

from __future__ import annotations

import json
import re
import socket
import sys
from pathlib import Path
from typing import Any

import uvicorn

README = Path(__file__).resolve().parents[2] / "packages" / "agent-wait-a2a" / "README.md"
README_URL = "http://127.0.0.1:8000/"


def readme_example() -> str:
    """The README's python block, as written."""
    return re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.DOTALL)[0]


def main() -> None:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)  # connections wait in the backlog until uvicorn accepts them
    port = sock.getsockname()[1]
    source = readme_example()
    assert README_URL in source, "the README example no longer names its URL"
    namespace: dict[str, Any] = {}
    code = source.replace(README_URL, f"http://127.0.0.1:{port}/")
    exec(compile(code, str(README), "exec"), namespace)
    app = namespace["app"]
    if sys.argv[1:2] == ["--tokens"]:
        card = namespace["agent_card"]("refunds", f"http://127.0.0.1:{port}/")
        handle = namespace["partial"](namespace["ahandle_message"], namespace["graph"], announce=[])
        app = namespace["a2a_app"](handle, card, tokens=json.loads(sys.argv[2]))
    print(port, flush=True)
    config = uvicorn.Config(app, log_level="warning")
    uvicorn.Server(config).run(sockets=[sock])


if __name__ == "__main__":
    sys.exit(main())
