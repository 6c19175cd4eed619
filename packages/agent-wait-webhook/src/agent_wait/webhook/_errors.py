"""The errors agent-wait-webhook raises, each an ``AgentWaitError`` (importable without httpx)."""

from __future__ import annotations

from agent_wait.core import AgentWaitError, DeliveryFailed


class WebhookDeliveryError(DeliveryFailed):
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
        retryable: True when the last attempt failed in a way a later delivery may not (HTTP
            429 or 5xx, a timeout, a network error) and only the retry budget ran out.
    """

    attempts: int

    def __init__(
        self,
        origin: str,
        reason: str,
        status_code: int | None,
        attempts: int,
        retryable: bool = False,
    ) -> None:
        plural = "attempt" if attempts == 1 else "attempts"
        super().__init__(
            f"{origin} {reason} ({attempts} {plural})",
            retryable=retryable,
            code=None if status_code is None else str(status_code),
            attempts=attempts,
        )
        self.status_code = status_code
        self.reason = reason


class WebhookVerificationError(AgentWaitError, ValueError):
    """A webhook request failed verification; answer it with HTTP 400.

    A header is missing, the timestamp is outside the tolerance window, no signature matches,
    or the body is not a JSON object. The message says which; it never contains a secret.
    """
