"""The delivery error of the webhook announcer (stdlib only, importable without httpx)."""

from __future__ import annotations

from agent_wait.core import AgentWaitError


class WebhookDeliveryError(AgentWaitError):
    """An envelope could not be delivered to the webhook.

    It lands in the :class:`~agent_wait.core.PublishReport` as
    ``"WebhookDeliveryError: <origin> <reason> (<n> attempts)"``. The message carries the
    receiver's origin (scheme, host, port: paths often embed a token), the status code and a
    short reason; never the secret, the headers or the body.

    Attributes:
        status_code: The last HTTP status received, or None when no response arrived
            (connection refused, timeout).
        reason: What went wrong, e.g. ``"HTTP 500 Internal Server Error"`` or
            ``"timed out after 1.0 s"``.
        attempts: How many requests were sent.
    """

    def __init__(self, origin: str, reason: str, status_code: int | None, attempts: int) -> None:
        plural = "attempt" if attempts == 1 else "attempts"
        super().__init__(f"{origin} {reason} ({attempts} {plural})")
        self.status_code = status_code
        self.reason = reason
        self.attempts = attempts
