import os
import subprocess
import sys

import agent_wait.redis


def test_public_api() -> None:
    assert sorted(agent_wait.redis.__all__) == [
        "RedisAnnounce",
        "RedisEntry",
        "RedisEntryOptions",
        "RedisOptions",
    ]


def test_plugin_registers_redis_without_importing_redis_py() -> None:
    code = (
        "import sys; from agent_wait.core._plugins import registry; reg = registry(); "
        "reg.load(['redis']); assert reg.announcers['redis'].plugin == 'redis'; assert reg.entry_points['redis'].plugin == 'redis'; "
        "import agent_wait.redis; assert 'redis' not in sys.modules, 'redis-py imported'"
    )
    env = {**os.environ, "AGENT_WAIT_DISABLE_PLUGIN_AUTOLOAD": "1"}
    subprocess.run([sys.executable, "-c", code], check=True, env=env)
