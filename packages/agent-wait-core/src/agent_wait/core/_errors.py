"""Exceptions raised by agent-wait."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from agent_wait.core._announce import PublishReport
    from agent_wait.core._identity import Identity
    from agent_wait.core._models import WaitEnvelope


class AgentWaitError(Exception):
    """Base class of every error agent-wait raises on purpose."""


class ConfigError(AgentWaitError, ValueError):
    """A configuration value (policy, announcer option, config file) is invalid.

    The message always names the field and the offending value.
    """


class PluginNotFoundError(ConfigError, LookupError):
    """A plugin, announcer or adapter name is not installed."""


class QuestionTooLarge(AgentWaitError, ValueError):
    """The question would make an envelope larger than the smallest transport accepts.

    Publish a reference (an id or URL the approver can resolve) instead of the payload itself.
    """

    def __init__(
        self,
        size: int,
        limit: int,
        function: str | None = None,
        *,
        thread_id_length: int | None = None,
    ) -> None:
        where = f" asked by {function!r}" if function else ""
        thread = (
            ""
            if thread_id_length is None
            else f" (its thread id, which the envelope carries twice, is {thread_id_length} characters)"
        )
        super().__init__(
            f"the question{where} makes an envelope of {size} bytes{thread}, over the "
            f"{limit}-byte limit of the SNS announcer, the smallest transport agent-wait ships "
            "and the limit every announcer is held to; publish a reference to the data (an id or "
            "URL the approver can resolve) instead of the data itself"
        )
        self.size = size
        self.limit = limit


class QuestionNotSendable(AgentWaitError, ValueError):
    """The question has no JSON text any transport can carry.

    Its text holds a lone surrogate (half of a UTF-16 pair, what ``errors="surrogateescape"``
    decoding or a split emoji leaves), which has no UTF-8 form, or a value JSON cannot render.

    Attributes:
        field: Where in the envelope (``"question.args.note"``), when one string was found.
    """

    def __init__(self, reason: str, function: str | None = None, field: str | None = None) -> None:
        where = f" asked by {function!r}" if function else ""
        super().__init__(f"the question{where} cannot be sent: {reason}")
        self.field = field


class InvalidAnswer(AgentWaitError, ValueError):
    """An answer cannot be applied to the function that asked (for example unknown argument names)."""


class DeliveryFailed(AgentWaitError):
    """A transport refused an envelope or could not be reached.

    Announcers raise it (``from`` the SDK's own exception, kept as ``__cause__``) instead of
    their SDK's error types, so hosts and retry policies handle one type whatever the transport.

    Attributes:
        retryable: True when the same delivery may succeed later: throttling, a server error
            (5xx), a connection error or timeout. False when it will not without a change:
            access denied, a missing queue or topic, a validation error.
        code: The transport's error code or HTTP status, when it gives one.
        attempts: How many times the transport was tried, when known.
    """

    def __init__(
        self,
        message: str,
        *,
        retryable: bool,
        code: str | None = None,
        attempts: int | None = None,
    ) -> None:
        super().__init__(message)
        self.retryable = retryable
        self.code = code
        self.attempts = attempts


class BatchEntryFailed(DeliveryFailed):
    """A transport refused one entry of a batch request; the other entries are unaffected.

    Attributes:
        service: The transport ("SQS", "PostgreSQL", "RabbitMQ").
        code: The transport's error code for the entry.
        detail: The transport's error message for the entry.
        sender_fault: True when the entry itself is at fault, None when not reported.
        retryable: As given; else True when the transport says it was not the entry's fault
            (``sender_fault`` false), False otherwise.
    """

    code: str

    def __init__(
        self,
        service: str,
        code: str,
        detail: str,
        sender_fault: bool | None = None,
        *,
        retryable: bool | None = None,
    ) -> None:
        if retryable is None:
            retryable = sender_fault is False
        super().__init__(
            f"{service} refused the entry: {code}: {detail}", retryable=retryable, code=code
        )
        self.service = service
        self.detail = detail
        self.sender_fault = sender_fault


class AnnounceFailed(AgentWaitError):
    """Raised by ``publish(..., strict=True)`` when a delivery failed or there was no announcer.

    Every announcer is tried first. ``report`` holds every outcome, so the host can log it and leave its inbound message
    unacknowledged to have it redelivered.
    """

    def __init__(self, report: PublishReport) -> None:
        self.report = report
        if report.envelopes and not report.deliveries:
            super().__init__(
                f"no announcer: {len(report.envelopes)} question(s) {report.question_ids} were "
                "delivered nowhere; pass announce=... with at least one announcer"
            )
            return
        failures = report.failures
        summary = "; ".join(f"{d.announcer} -> {d.question_id}: {d.error}" for d in failures[:5])
        more = f" (+{len(failures) - 5} more)" if len(failures) > 5 else ""
        super().__init__(f"{len(failures)} deliveries failed: {summary}{more}")


class _StoredQuestion(Protocol):
    # What an error reads of a StoredQuestion: naming the question store here would make the
    # hook specs, which import these errors, import the store.
    @property
    def envelope(self) -> WaitEnvelope: ...


class NotAnApprover(AgentWaitError, PermissionError):
    """The person may not answer (or cancel) the question; nothing was recorded or sent.

    Attributes:
        question: The question (a ``StoredQuestion``), still open.
        identity: Who tried.
        reason: Why not (not one of its approvers, or they started the run).
    """

    def __init__(
        self, question: _StoredQuestion, identity: Identity, reason: str, doing: str = "answer"
    ) -> None:
        envelope = question.envelope
        super().__init__(
            f"question {envelope.question_id} (thread {envelope.thread_id}): "
            f"{identity.describe()} may not {doing} it: {reason}; nothing recorded or sent"
        )
        self.question = question
        self.identity = identity
        self.reason = reason
