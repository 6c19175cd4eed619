"""Routes plugins serve inside the inbox (``register_inbox_routes``), each at ``/<name>``."""

from __future__ import annotations

import logging

from starlette.routing import BaseRoute, Mount

from agent_wait.core import inbox_routes
from agent_wait.inbox._web import Web

logger = logging.getLogger("agent_wait.inbox")


def routes(web: Web) -> list[BaseRoute]:
    """Every plugin's routes, mounted at ``/<name>`` outside the login (they check requests).

    They answer into the inbox's store and entry point. A plugin whose routes cannot be built
    (not configured, fails to import) is logged and left out: the inbox serves without them.
    """
    mounts: list[BaseRoute] = []
    for name, build in inbox_routes().items():
        try:
            built = list(build(store=web.store, entry=web.entry))
        except Exception as error:  # noqa: BLE001 - one plugin's routes never break the inbox
            logger.warning("inbox: the %s routes are not served: %s", name, error)
            continue
        mounts.append(Mount(f"/{name}", routes=built))
    return mounts
