"""@wait binds and calls like Signature.bind + apply_defaults on every signature (the fast path)."""

from __future__ import annotations

import inspect
from typing import Any

import pytest

from agent_wait.host.adapter import WaitCall, make_wait


class Adapter:
    name = "binding"

    def park(self, call: WaitCall) -> Any:
        raise AssertionError("the predicate said no; nothing parks")

    async def apark(self, call: WaitCall) -> Any:
        raise AssertionError("the predicate said no; nothing parks")

    def thread_id(self, call: WaitCall) -> str:
        return "thread-1"

    def hidden_parameters(self, signature: inspect.Signature) -> frozenset[str]:
        return frozenset({"ctx"}) & frozenset(signature.parameters)


def named(a: int, b: int = 2, c: str = "c") -> Any:
    return ("named", a, b, c)


def keyword_only(a: int, *, k: int, m: int = 3) -> Any:
    return ("keyword_only", a, k, m)


def with_context(a: int, ctx: object = None) -> Any:
    return ("with_context", a, ctx)


def with_decision(a: int, decision: Any) -> Any:
    return ("with_decision", a, decision)


def positional_only(a: int, /, b: int = 2) -> Any:
    return ("positional_only", a, b)


def variadic(a: int, *rest: int, **extra: int) -> Any:
    return ("variadic", a, rest, extra)


FUNCTIONS = [named, keyword_only, with_context, with_decision, positional_only, variadic]
CALLS: list[tuple[tuple[Any, ...], dict[str, Any]]] = [
    ((), {}),
    ((1,), {}),
    ((1, 5), {}),
    ((1, 5, "x"), {}),
    ((1, 5, "x", 9), {}),
    ((), {"a": 1}),
    ((1,), {"b": 7}),
    ((), {"c": "z", "a": 1}),
    ((1,), {"a": 2}),
    ((1,), {"nope": 2}),
    ((1,), {"k": 4}),
    ((), {"m": 1, "k": 4, "a": 0}),
    ((1, 2), {"k": 4}),
    ((1,), {"ctx": "context"}),
    ((1, "context"), {}),
    ((1,), {"decision": {"action": "approve"}}),
    ((1, 2, 3), {"extra": 1}),
]


def _reference(signature: inspect.Signature, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    try:
        bound = signature.bind(*args, **kwargs)
    except TypeError as error:
        return ("TypeError", str(error))
    bound.apply_defaults()
    return list(bound.arguments.items()), bound


@pytest.mark.parametrize("function", FUNCTIONS, ids=lambda f: f.__name__)
@pytest.mark.parametrize(("args", "kwargs"), CALLS, ids=repr)
def test_bind_and_run_match_signature_bind(
    function: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> None:
    wrapper = make_wait(Adapter())(when=lambda **_: False)(function)
    state = wrapper.__agent_wait__
    expected = _reference(state.signature, args, kwargs)
    if expected[0] == "TypeError":
        with pytest.raises(TypeError) as info:
            state.bind(args, dict(kwargs))
        assert str(info.value) == expected[1]
        with pytest.raises(TypeError):
            wrapper(*args, **kwargs)
        return
    items, bound = expected
    arguments = state.bind(args, dict(kwargs))
    assert list(arguments.items()) == items
    assert state.run(arguments) == function(*bound.args, **bound.kwargs)
    assert wrapper(*args, **kwargs) == function(*bound.args, **bound.kwargs)


def test_predicate_sees_defaults_and_not_hidden_parameters() -> None:
    seen: list[dict[str, Any]] = []

    def when(**published: Any) -> bool:
        seen.append(published)
        return False

    wrapper = make_wait(Adapter())(when=when)(with_context)
    assert wrapper(1) == ("with_context", 1, None)
    assert wrapper(a=2, ctx="context") == ("with_context", 2, "context")
    assert seen == [{"a": 1}, {"a": 2}]


def test_bound_arguments_are_fresh_per_call() -> None:
    wrapper = make_wait(Adapter())(when=lambda **_: False)(named)
    state = wrapper.__agent_wait__
    first = state.bind((1,), {})
    first["b"] = 99
    assert state.bind((1,), {}) == {"a": 1, "b": 2, "c": "c"}
