import os
import subprocess
import sys

import agent_wait.opentelemetry


def test_public_api() -> None:
    assert sorted(agent_wait.opentelemetry.__all__) == [
        "OpenTelemetryPlugin",
        "TRACEPARENT",
        "asking_span_context",
        "observe_store",
    ]


def test_installed_is_registered_and_needs_only_the_api() -> None:
    code = (
        "import sys; from agent_wait.core._plugins import registry; reg = registry(); "
        "plugin = reg.manager.get_plugin('opentelemetry'); "
        "from agent_wait.opentelemetry._plugin import Inactive; "
        "assert isinstance(plugin, Inactive), plugin; "
        "assert 'opentelemetry.sdk' not in sys.modules, 'SDK imported'"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENT_WAIT_", "OTEL_"))}
    subprocess.run([sys.executable, "-c", code], check=True, env=env)
