"""Redis Streams announcer for agent-wait.

Each question becomes one stream entry (``XADD``); consumers read it with a consumer group::

    from agent_wait.core import announcer, publish

    announce = announcer("redis", url="redis://localhost:6379/0", stream="agent-wait:questions")
    report = publish(questions, thread_id="order-4471", announce=announce)

Or by name in ``agent-wait.toml``::

    [[announce]]
    use = "redis"
    url = "redis://localhost:6379/0"
    index = true

Options, the entry's fields and the dedupe behaviour are described on :class:`RedisAnnounce`
and in docs/announcers/redis.md.

:class:`RedisEntry` is the ``redis`` entry point (``entry("redis", url=...)``): a stream hosts
read with a consumer group, described in docs/entry-points.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent_wait.core import lazy_exports

if TYPE_CHECKING:
    from agent_wait.redis._announcer import RedisAnnounce
    from agent_wait.redis._entry import RedisEntry
    from agent_wait.redis._options import RedisEntryOptions, RedisOptions

__all__ = ["RedisAnnounce", "RedisEntry", "RedisEntryOptions", "RedisOptions"]

# Lazy, so importing the package (the entry point does) never imports redis-py.
__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "RedisEntryOptions": "._options",
        "RedisOptions": "._options",
        "RedisAnnounce": "._announcer",
        "RedisEntry": "._entry",
    },
)
