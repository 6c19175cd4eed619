"""The plugin manager of agent-wait: observing hooks called through pluggy, each impl contained.

pluggy stops a hook call at the first implementation that raises, and neither a publish nor a
host's handling of a message may fail because of a plugin. So when a plugin is registered, every
implementation of those hooks (``adjust_envelope``, ``delivery_outcome``, ``answer_handled``)
gets its own error boundary (and so do ``operation_started``, ``operation_finished`` and
``message_headers``): plain implementations,
``wrapper=True`` and old-style ``hookwrapper=True`` generators alike. A failing implementation is
logged with its plugin name and the call goes on as if it had returned nothing; the hook is still
called through pluggy, so wrappers (tracing, timing) see and may change the result.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Generator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeGuard, cast

import pluggy

from agent_wait.core._models import ReplyWith, check_reply

if TYPE_CHECKING:
    from agent_wait.core._models import Sent, WaitEnvelope

logger = logging.getLogger("agent_wait.publish")

ADJUSTABLE = frozenset({"tags", "reply_to", "correlation", "reply_with"})
"""The envelope fields ``adjust_envelope`` may change (``reply_with``: only extra keys, as the
envelope's own validation keeps its ids and a null answer)."""

CONTAINED_HOOKS = (
    "adjust_envelope",
    "delivery_outcome",
    "answer_handled",
    "operation_started",
    "operation_finished",
    "message_headers",
    "worker_started",
    "worker_stopped",
)
"""Hooks called during a publish, a host's handling or its worker's loop: a failing implementation is logged, never raised."""


@dataclass(frozen=True, slots=True)
class Operation:
    """One publish, answer or sweep, as ``operation_started`` and ``operation_finished`` see it.

    Attributes:
        name: ``publish``, ``apublish``, ``answer`` or ``sweep``.
        thread_id: The thread published to or answered, when there is one.
        question_id: The question answered (``answer``).
    """

    name: str
    thread_id: str | None = None
    question_id: str | None = None


@dataclass(frozen=True, slots=True)
class PublishHooks:
    """The hooks core calls per publish or per handled answer that have implementations.

    None for a hook nobody implements.

    Attributes:
        adjust: The ``adjust_envelope`` caller.
        observe: The ``delivery_outcome`` caller.
        started: The ``operation_started`` caller.
        finished: The ``operation_finished`` caller.
        headers: The ``message_headers`` caller.
        handled: The ``answer_handled`` caller.
    """

    adjust: pluggy.HookCaller | None
    observe: pluggy.HookCaller | None
    started: pluggy.HookCaller | None = None
    finished: pluggy.HookCaller | None = None
    headers: pluggy.HookCaller | None = None
    handled: pluggy.HookCaller | None = None
    operations: bool = field(init=False, repr=False, compare=False)
    """True when a plugin implements ``operation_started`` or ``operation_finished``."""
    quiet: bool = field(init=False, repr=False, compare=False)
    """True when a publish calls no hook (``message_headers`` is the announcers' to call)."""

    def __post_init__(self) -> None:
        # Fields, not properties: publish reads them on every call.
        operations = self.started is not None or self.finished is not None
        object.__setattr__(self, "operations", operations)
        object.__setattr__(
            self, "quiet", not operations and self.adjust is None and self.observe is None
        )


class _Adjusting:
    """The envelope as adjusted so far, within one ``adjust_envelope`` call."""

    __slots__ = ("envelope", "original", "updates")

    def __init__(self, envelope: WaitEnvelope) -> None:
        self.original = envelope
        self.envelope = envelope
        self.updates: list[dict[str, Any]] = []


_adjusting: ContextVar[_Adjusting | None] = ContextVar("agent_wait_adjusting", default=None)


class HookManager(pluggy.PluginManager):
    """A ``pluggy.PluginManager`` that contains publish-hook failures and caches their lookup."""

    def __init__(self, project_name: str) -> None:
        super().__init__(project_name)
        self._publish_hooks: PublishHooks | None = None
        self._generation = 0
        self._cache_lock = threading.Lock()

    def register(self, plugin: object, name: str | None = None) -> str | None:
        """Register a plugin (see ``pluggy.PluginManager.register``), containing its publish hooks."""
        registered = super().register(plugin, name)
        if registered is not None:
            for hook_name in CONTAINED_HOOKS:
                caller: pluggy.HookCaller | None = getattr(self.hook, hook_name, None)
                for impl in caller.get_hookimpls() if caller else ():
                    if impl.plugin is plugin:
                        _contain(hook_name, impl)
        self._invalidate()
        return registered

    def unregister(self, plugin: object | None = None, name: str | None = None) -> Any | None:
        """Unregister a plugin (see ``pluggy.PluginManager.unregister``)."""
        removed = super().unregister(plugin, name)
        self._invalidate()
        return removed

    def publish_hooks(self) -> PublishHooks:
        """The publish and answer hooks with implementations, looked up again only after (un)registration."""
        return self._publish_hooks or self._lookup()

    def _lookup(self) -> PublishHooks:
        with self._cache_lock:
            generation = self._generation
            callers: list[pluggy.HookCaller | None] = []
            for name in _PUBLISH_HOOKS:
                caller: pluggy.HookCaller = getattr(self.hook, name)
                callers.append(caller if caller.get_hookimpls() else None)
            hooks = PublishHooks(*callers)
            if generation == self._generation:
                self._publish_hooks = hooks
            return hooks

    def _invalidate(self) -> None:
        with self._cache_lock:
            self._generation += 1
            self._publish_hooks = None


_PUBLISH_HOOKS = (
    "adjust_envelope",
    "delivery_outcome",
    "operation_started",
    "operation_finished",
    "message_headers",
    "answer_handled",
)
"""In the order of :class:`PublishHooks`' fields."""


def adjust_envelope(caller: pluggy.HookCaller, envelope: WaitEnvelope) -> WaitEnvelope:
    """Call ``adjust_envelope`` and apply the updates it returns, in call order.

    Each implementation sees the envelope with the earlier implementations' updates applied. The
    hook's result is the list of updates; when a wrapper changed it, that list is what applies.
    """
    state = _Adjusting(envelope)
    token = _adjusting.set(state)
    try:
        result = caller(envelope=envelope)
    except Exception:
        # Only an implementation registered around the contained manager can get here.
        logger.exception("adjust_envelope hook call failed; envelope left as built")
        return envelope
    finally:
        _adjusting.reset(token)
    updates = cast("list[object]", result) if isinstance(result, list) else [result]
    if len(updates) == len(state.updates) and all(
        a is b for a, b in zip(updates, state.updates, strict=True)
    ):
        return state.envelope
    adjusted = envelope
    for update in updates:
        try:
            adjusted = _apply(adjusted, update)
        except Exception:
            logger.exception(
                "adjust_envelope: an update a hook wrapper returned is invalid; skipped"
            )
    return adjusted


def answer_handled(caller: pluggy.HookCaller, answer: object, handled: object) -> None:
    """Call ``answer_handled``; failures are logged, never raised."""
    try:
        caller(answer=answer, handled=handled)
    except Exception:
        logger.exception("answer_handled hook call failed")


def delivery_outcome(
    caller: pluggy.HookCaller, delivery: object, envelope: WaitEnvelope, announcer: object
) -> None:
    """Call ``delivery_outcome``; failures are logged, never raised."""
    try:
        caller(delivery=delivery, envelope=envelope, announcer=announcer)
    except Exception:
        logger.exception("delivery_outcome hook call failed")


class Operating:
    """Calls ``operation_started`` on entry and ``operation_finished`` on exit.

    ``with Operating(hooks, operation) as operating:`` then set ``operating.result``; on exit
    the hook gets it, or the exception. Failures of either hook are logged, never raised.
    """

    __slots__ = ("hooks", "operation", "result")

    def __init__(self, hooks: PublishHooks, operation: Operation) -> None:
        self.hooks = hooks
        self.operation = operation
        self.result: object = None

    def __enter__(self) -> Operating:
        if self.hooks.started is not None:
            try:
                self.hooks.started(operation=self.operation)
            except Exception:
                logger.exception("operation_started hook call failed")
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: object
    ) -> None:
        if self.hooks.finished is not None:
            try:
                self.hooks.finished(operation=self.operation, result=self.result, error=error)
            except Exception:
                logger.exception("operation_finished hook call failed")


def message_headers(caller: pluggy.HookCaller, envelope: Sent) -> dict[str, str]:
    """The merged ``message_headers`` of every plugin (the first to name a header wins)."""
    try:
        results = cast("list[object]", caller(envelope=envelope))
    except Exception:
        logger.exception("message_headers hook call failed")
        return {}
    headers: dict[str, str] = {}
    for result in results:
        if not isinstance(result, Mapping):
            if result is not None:
                logger.error("message_headers: expected a dict or None, got %r; ignored", result)
            continue
        for name, value in cast("Mapping[object, object]", result).items():
            if _header_text(name) and _header_text(value):
                headers.setdefault(name, value)
            else:
                logger.error("message_headers: %r: %r is not a text header; ignored", name, value)
    return headers


def _header_text(value: object) -> TypeGuard[str]:
    # Non-empty and printable: no line break can reach an HTTP or AMQP header.
    return isinstance(value, str) and value.isprintable() and bool(value.strip())


def _apply(envelope: WaitEnvelope, update: object) -> WaitEnvelope:
    if update is None:
        return envelope
    if not isinstance(update, Mapping):
        raise TypeError(f"expected a dict of field updates or None, got {update!r}")
    changes = cast("Mapping[str, Any]", update)
    unknown = sorted(set(changes) - ADJUSTABLE)
    if unknown:
        raise ValueError(f"may only change {sorted(ADJUSTABLE)}, not {unknown}")
    if len(changes) == 1 and "reply_with" in changes:
        # The usual update (a trace context, a token): validating the reply alone is what
        # revalidating the envelope would check, at a fraction of the cost.
        reply = ReplyWith.model_validate(changes["reply_with"])
        check_reply(envelope.thread_id, envelope.question_id, reply)
        return envelope.model_copy(update={"reply_with": reply})
    return type(envelope).model_validate({**envelope.model_dump(), **changes})


def _contain(hook_name: str, impl: pluggy.HookImpl) -> None:
    function = cast("Callable[..., Any]", impl.function)
    plugin = impl.plugin_name
    if impl.hookwrapper:
        guarded = _old_style_wrapper(function, hook_name, plugin)
    elif impl.wrapper:
        guarded = _wrapper(function, hook_name, plugin)
    elif hook_name == "adjust_envelope":
        position = impl.argnames.index("envelope") if "envelope" in impl.argnames else None
        guarded = _adjuster(function, plugin, position)
    else:
        guarded = _plain(function, hook_name, plugin)
    # pluggy calls ``impl.function`` with the arguments named by the original (``impl.argnames``
    # was read from it at registration); swapping it is how each implementation gets its own
    # error boundary without re-implementing pluggy's call loop.
    impl.function = guarded  # pyright: ignore[reportAttributeAccessIssue]


def _plain(function: Callable[..., Any], hook_name: str, plugin: str) -> Callable[..., Any]:
    def guarded(*args: Any, **kwargs: Any) -> Any:
        try:
            return function(*args, **kwargs)
        except Exception:
            logger.exception("%s hook of plugin %r failed", hook_name, plugin)
            return None

    return guarded


def _adjuster(
    function: Callable[..., Any], plugin: str, position: int | None
) -> Callable[..., Any]:
    def guarded(*args: Any, **kwargs: Any) -> Any:
        state = _adjusting.get()
        if position is not None:
            envelope = cast("WaitEnvelope", args[position])
            if state is None or state.original is not envelope:
                state = _Adjusting(envelope)  # called from outside a publish: no chaining
            # The envelope with the earlier implementations' updates, not the one as built.
            args = (*args[:position], state.envelope, *args[position + 1 :])
        try:
            update = function(*args, **kwargs)
            adjusted = update if state is None else _apply(state.envelope, update)
        except Exception:
            logger.exception("adjust_envelope hook of plugin %r failed; skipped", plugin)
            return None
        if update is None or state is None:
            return update
        state.envelope = cast("WaitEnvelope", adjusted)
        state.updates.append(update)
        return update

    return guarded


def _wrapper(function: Callable[..., Any], hook_name: str, plugin: str) -> Callable[..., Any]:
    def guarded(*args: Any, **kwargs: Any) -> Generator[None, object, object]:
        inner = _start(function, args, kwargs, hook_name, plugin)
        if inner is None:
            return (yield)
        try:
            result = yield
        except BaseException as error:
            # Only what containment lets through (KeyboardInterrupt and the like): let the
            # wrapper see it, as pluggy would, then let it propagate.
            try:
                inner.throw(error)
            except StopIteration as stop:
                return stop.value
            raise
        try:
            inner.send(result)
        except StopIteration as stop:
            return stop.value
        except Exception:
            logger.exception("%s hook wrapper of plugin %r failed", hook_name, plugin)
            return result
        inner.close()
        logger.error("%s hook wrapper of plugin %r yielded twice; ignored", hook_name, plugin)
        return result

    return guarded


def _old_style_wrapper(
    function: Callable[..., Any], hook_name: str, plugin: str
) -> Callable[..., Any]:
    def guarded(*args: Any, **kwargs: Any) -> Generator[None, object, None]:
        inner = _start(function, args, kwargs, hook_name, plugin)
        outcome = yield
        if inner is None:
            return
        try:
            inner.send(outcome)
        except StopIteration:
            return
        except Exception:
            logger.exception("%s hook wrapper of plugin %r failed", hook_name, plugin)
            return
        inner.close()
        logger.error("%s hook wrapper of plugin %r yielded twice; ignored", hook_name, plugin)

    return guarded


def _start(
    function: Callable[..., Any],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    hook_name: str,
    plugin: str,
) -> Generator[None, object, object] | None:
    try:
        inner = cast("Generator[None, object, object]", function(*args, **kwargs))
        next(inner)
    except Exception:  # StopIteration included: a wrapper that never yields
        logger.exception("%s hook wrapper of plugin %r failed", hook_name, plugin)
        return None
    return inner
