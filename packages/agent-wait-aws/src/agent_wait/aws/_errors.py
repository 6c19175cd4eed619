"""Which AWS errors a retry may cure, and the error of an entry a batch request refused."""

from __future__ import annotations

from agent_wait.core import BatchEntryFailed

RETRYABLE_CODES = frozenset(
    {
        "InternalError",
        "InternalFailure",
        "InternalServerError",
        "KMSThrottlingException",
        "ProvisionedThroughputExceededException",
        "RequestLimitExceeded",
        "RequestThrottled",
        "RequestThrottledException",
        "ServiceUnavailable",
        "SlowDown",
        "ThrottledException",
        "Throttling",
        "ThrottlingException",
        "TooManyRequestsException",
        "TransactionInProgressException",
    }
)
"""AWS error codes of throttling and server faults: the same request may succeed later."""


def refused_entry(
    service: str, code: str, detail: str, sender_fault: bool | None = None
) -> BatchEntryFailed:
    """The :class:`~agent_wait.core.BatchEntryFailed` of one entry an AWS batch request refused.

    It is retryable when the service says it was not the entry's fault (``SenderFault`` false)
    or, when the service does not say (EventBridge), when the code is a throttling or
    server-fault code of :data:`RETRYABLE_CODES`.

    Args:
        service: The service, for the message ("SQS", "SNS", "EventBridge").
        code: The entry's error code.
        detail: The entry's error message.
        sender_fault: The entry's ``SenderFault``, None when the service reports none.
    """
    retryable = code in RETRYABLE_CODES if sender_fault is None else not sender_fault
    return BatchEntryFailed(service, code, detail, sender_fault, retryable=retryable)
