"""Hook specifications of the ``agent_wait`` pluggy project.

A plugin is a module named by an entry point in the ``agent_wait`` group::

    [project.entry-points.agent_wait]
    sqs = "agent_wait.sqs._plugin"

and implements any of these hooks with :data:`agent_wait.core.hookimpl`. Registry hooks take a
``register`` callback instead of returning values, so the host resolves name collisions. Every
hook is documented in docs/plugins/hooks.md.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:
    from agent_wait.core._announce import BaseAnnounce, Delivery
    from agent_wait.core._hooks import Operation
    from agent_wait.core._models import Answer, Sent, WaitEnvelope
    from agent_wait.core._reports import Handled, WorkerStatus

PROJECT = "agent_wait"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)

RegisterTarget = Callable[[str, "str | Callable[..., Any]"], None]


@hookspec
def register_announcers(register: RegisterTarget) -> None:
    """Register announcer kinds by name.

    Call ``register(name, target)`` once per kind. ``target`` is either an import path
    ``"package.module:Class"`` (imported only when the name is used, so registering costs no
    import of the transport SDK) or a callable returning a :class:`BaseAnnounce`. Its keyword
    arguments are the options users write in configuration.

    Args:
        register: The callback.

    Added in 0.1.
    """


@hookspec
def register_adapters(register: RegisterTarget) -> None:
    """Register framework adapters by name.

    Call ``register(name, target)`` with an import path or a callable returning the
    adapter object (see :class:`agent_wait.host.adapter.FrameworkAdapter`). Used for discovery
    (``agent-wait plugins``) and by hosts that pick a framework by name.

    Args:
        register: The callback.

    Added in 0.1.
    """


@hookspec
def register_entry_points(register: RegisterTarget) -> None:
    """Register entry-point kinds by name: where hosts receive messages and answers are sent.

    Call ``register(name, target)`` with an import path or a callable returning a
    :class:`agent_wait.core.EntryPoint`. Its ``options_model`` (an
    :class:`agent_wait.core.EntryOptions` subclass) declares the options users write in the
    ``[entry]`` configuration table; they are validated against it before the call.

    Args:
        register: The callback.

    Added in 0.1.
    """


@hookspec
def register_commands(register: RegisterTarget) -> None:
    """Register subcommands of the ``agent-wait`` command line.

    Call ``register(name, target)`` once per command. ``name`` is the command's words: one word
    (``"dashboard"``) adds a top-level command, several (``"inbox serve"``) add a subcommand under
    an existing command. ``target`` is an import path ``"package.module:function"`` or a callable
    ``setup(parser)`` that adds the command's arguments to the :class:`argparse.ArgumentParser`
    it is given and sets ``parser.set_defaults(handler=run)``, where ``run(args)`` returns the
    exit code. The first line of ``setup``'s docstring is the command's help. A command whose
    setup raises, or whose name is taken by a built-in command, is logged and left out: it never
    breaks the other commands.

    Args:
        register: The callback.

    Added in 0.1.
    """


@hookspec
def register_question_stores(register: RegisterTarget) -> None:
    """Register question stores by the name of the announcer whose questions they read.

    Call ``register(name, target)`` with an import path or a callable returning a
    :class:`agent_wait.core.QuestionStore`. It is called with the options of the announcer
    ``name`` as configured (``url`` and ``table`` for ``postgres``, ``table_name`` and the AWS
    options for ``dynamodb``), so a tool that serves or answers questions (``agent-wait inbox
    serve --store postgres``) reads what that announcer writes.

    Args:
        register: The callback.

    Added in 0.1.
    """


@hookspec
def register_execution_ledgers(register: RegisterTarget) -> None:
    """Register execution ledgers by the name of the announcer whose storage they share.

    Call ``register(name, target)`` with an import path or a callable returning an
    :class:`agent_wait.core.ExecutionLedger`. It is called with the options of the announcer
    ``name`` as configured, so the records of approved calls live beside the questions (their
    own table in the same database): ``sqlite`` in core, ``postgres``.

    Args:
        register: The callback.

    Added in 0.1.
    """


@hookspec
def register_identity_providers(register: RegisterTarget) -> None:
    """Register identity providers (single sign-on) by name, for web front-ends such as the inbox.

    Call ``register(name, target)`` once per provider. ``target`` is an import path or a
    callable that takes no arguments and returns the provider. The inbox web app asks every
    registered provider who makes a request: the provider's ``identify(request)`` returns the
    person's name, or None when the request carries no identity the provider vouches for. It may
    also offer ``login_url(next)`` (where the login page sends people to sign in) and
    ``routes()`` (Starlette routes mounted at ``/sso/<name>``, such as a sign-in callback); see
    ``agent_wait.inbox.IdentityProvider``. A provider only identifies: the name it returns is the
    one recorded as ``answered_by``.

    Args:
        register: The callback.

    Added in 0.1.
    """


@hookspec
def register_inbox_routes(register: RegisterTarget) -> None:
    """Register web routes that a plugin serves inside the inbox web app (a channel's callbacks).

    Call ``register(name, target)`` once per set of routes. ``target`` is an import path or a
    callable ``routes(store=..., entry=...)`` returning Starlette routes, which the inbox web
    app (``agent-wait inbox serve``) mounts at ``/<name>``: Slack's Interactivity Request URL
    ``/slack/interactivity``, for example. ``store`` is the inbox's question store and
    ``entry`` the entry point its answers go to (None: where :func:`agent_wait.host.answer`
    sends them). The routes are outside the inbox's login: they authenticate each request
    themselves (a signature). A target that raises is logged and left out; it never breaks the
    inbox. With no plugin implementing it, the inbox mounts nothing more.

    Args:
        register: The callback.

    Added in 0.1.
    """


@hookspec
def adjust_envelope(envelope: WaitEnvelope) -> dict[str, Any] | None:
    """Adjust an envelope before any announcer sees it.

    Return a dict of field updates (only ``tags``, ``reply_to``, ``correlation`` and extra keys
    of ``reply_with`` may change) or None. Updates from several plugins apply in hook call order,
    each plugin seeing the earlier ones applied; an update is validated, and a hook that raises or
    returns an invalid update is logged and skipped: it never blocks a publish. The call's result
    is the list of updates, which a ``wrapper=True`` implementation may replace.

    Args:
        envelope: The envelope as built (with earlier plugins' updates applied).

    Added in 0.1.
    """


@hookspec
def delivery_outcome(delivery: Delivery, envelope: WaitEnvelope, announcer: BaseAnnounce) -> None:
    """Observe each delivery outcome (for metrics and tracing).

    Called once per announcer and envelope after the attempt. Exceptions are logged and
    ignored, one implementation at a time (wrappers included), so one broken observer never
    silences the others.

    Args:
        delivery: The outcome.
        envelope: The envelope that was (or was not) delivered.
        announcer: The announcer that was called (its ``destination`` names where it sends).

    Added in 0.1.
    """


@hookspec
def operation_started(operation: Operation) -> None:
    """An operation begins: a ``publish``/``apublish`` of questions, an ``answer`` or a ``sweep``.

    Paired with :func:`operation_finished` for the same ``operation`` object, in the same thread
    and context (a tracer makes its span current here: the deliveries' observers run inside it).
    Not called at all when no plugin implements either hook. Exceptions are logged and ignored.

    Args:
        operation: What starts; the same object is given to ``operation_finished``.

    Added in 0.1.
    """


@hookspec
def operation_finished(operation: Operation, result: object, error: BaseException | None) -> None:
    """An operation started by :func:`operation_started` ends, however it ends.

    Args:
        operation: The object ``operation_started`` saw.
        result: The ``PublishReport`` of a publish, the ``AnswerResult`` of an answer, the
            ``SweepReport`` of a sweep; None when it raised.
        error: The exception it raised (``AnnounceFailed`` of a strict publish carries its
            report), else None.

    Added in 0.1.
    """


@hookspec
def message_headers(envelope: Sent) -> dict[str, str] | None:
    """Headers to send with a message where the transport has its own (trace context).

    Transports that have headers or attributes (SQS and SNS message attributes, NATS and
    RabbitMQ headers, HTTP headers, Redis stream fields) send these besides the message's JSON,
    after their own routing attributes and within their limits. The body never changes; put
    what must survive a consumer in ``reply_with`` with ``adjust_envelope`` too. Exceptions are
    logged and ignored.

    Args:
        envelope: The message about to be sent: a question's ``WaitEnvelope`` (as adjusted), a
            ``LifecycleEvent``, or an ``Answer`` or ``StartMessage`` an entry point sends
            (``answer()``, ``agent-wait answer``, the sweeper). Check its type before reading
            fields only one of them has.

    Added in 0.1.
    """


@hookspec
def answer_handled(answer: Answer, handled: Handled) -> None:
    """Observe what a framework's ``handle_message`` did with each answer (metrics, audit).

    Called once per answer that got an outcome (resumed, held, duplicate, unknown question,
    invalid answer), after the run was saved and its questions published; when a strict publish
    failed, before ``AnnounceFailed`` propagates, with the failed report. Not called for start
    messages, nor when handling raised before an outcome. Exceptions are logged and ignored.

    Args:
        answer: The answer message.
        handled: The outcome, the run's result (None when nothing ran), the publish report
            and, when nothing ran, why.

    Added in 0.1.
    """


@hookspec
def agent_wait_approvers(question: WaitEnvelope) -> list[str] | None:
    """Who may answer ``question``, besides its policy's ``approvers``: people and ``group:`` entries.

    Called by every answer path (``answer()``, ``agent-wait answer``, the inbox) before anything
    is recorded, and by the inbox to list each person's questions. Return None to name nobody;
    the entries of every implementation are added to the policy's and to the ``group:`` of an
    ``approver_group`` tag (see docs/governance.md). A group entry is matched against the groups
    the person's identity carries (an IdP ``groups`` claim, a proxy's groups header) and the
    ``[approvers.groups]`` configuration. A plugin written before this hook existed simply does
    not implement it: questions then have the approvers their policy and tags give.

    An implementation that raises (or returns something that is not a list of entries) makes
    the answer refused, never let through.

    Args:
        question: The question's envelope (its ``tags``, ``source``, ``question``).

    Added in 0.1.
    """


@hookspec
def worker_started(status: WorkerStatus) -> None:
    """A worker's loop (``serve``, ``serve_entry`` and their async forms) starts.

    ``status`` stays live until :func:`worker_stopped`: read its figures when you need them
    (``in_flight``, ``held``, ``ready``, ``report`` counted as it goes, ``oldest_waiting()``),
    for example from an observable instrument's callback. Called in the thread that runs the
    loop, before its first receive. Exceptions are logged and ignored.

    Args:
        status: The running worker.

    Added in 0.1.
    """


@hookspec
def worker_stopped(status: WorkerStatus) -> None:
    """The worker :func:`worker_started` announced has stopped (its ``report`` is final).

    Called however the loop ended, signal or error. Exceptions are logged and ignored.

    Args:
        status: The same object ``worker_started`` got.

    Added in 0.1.
    """
