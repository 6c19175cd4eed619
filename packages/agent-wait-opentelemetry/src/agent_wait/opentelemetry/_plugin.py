"""The entry point's plugin: tracing, metrics and log correlation when an SDK is there.

The plugin is built when agent-wait loads its plugins (the first publish, or the first announcer
built by name). It records only if, by then, the application installed an OpenTelemetry SDK
(global tracer or meter provider) and did not switch it off (``AGENT_WAIT_OTEL_DISABLED=1`` or
``OTEL_SDK_DISABLED=true``). Otherwise it registers no hook, so publishing costs exactly what it
costs without the distribution installed.
"""

from __future__ import annotations

import logging

from agent_wait.opentelemetry._telemetry import (
    OpenTelemetryPlugin,
    disabled,
    install_log_correlation,
)
from opentelemetry import metrics, trace

logger = logging.getLogger("agent_wait.opentelemetry")

# The API's stand-ins until an SDK is installed (the meter provider's proxy class is private).
_NO_SDK = frozenset(
    {"ProxyTracerProvider", "NoOpTracerProvider", "_ProxyMeterProvider", "NoOpMeterProvider"}
)


class Inactive:
    """What the entry point registers when nothing would be recorded: no hooks."""


def sdk_installed() -> bool:
    """True when the application installed a global tracer or meter provider (an SDK)."""
    providers = (trace.get_tracer_provider(), metrics.get_meter_provider())
    return any(type(p).__name__ not in _NO_SDK for p in providers)


def load() -> OpenTelemetryPlugin | Inactive:
    """The plugin for this process: active, or inactive when switched off or without an SDK."""
    if disabled():
        logger.debug("agent-wait-opentelemetry: switched off by the environment")
        return Inactive()
    if not sdk_installed():
        logger.debug(
            "agent-wait-opentelemetry: no OpenTelemetry SDK installed when agent-wait loaded its "
            "plugins; nothing is recorded in this process"
        )
        return Inactive()
    install_log_correlation()
    return OpenTelemetryPlugin()


plugin = load()
