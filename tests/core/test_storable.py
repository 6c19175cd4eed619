"""storable_problem: the answers every framework's persistence keeps unchanged."""

from __future__ import annotations

import math
from typing import Any

import pytest

from agent_wait.core import storable_problem


@pytest.mark.parametrize(
    "value",
    [
        None,
        True,
        0,
        2**63 - 1,
        -(2**63),
        0.1,
        -0.0,
        1e308,
        "",
        "\U0001f600",
        [1, (2, 3)],
        {"a": {"b": []}},
    ],
)
def test_json_values_in_range_are_storable(value: Any) -> None:
    assert storable_problem(value) is None


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (2**63, "answer: the integer 9223372036854775808 is outside the signed 64-bit range"),
        (-(2**63) - 1, "answer: the integer -9223372036854775809 is outside"),
        ({"a": [1, math.nan]}, "answer.a[1]: nan is not a finite number"),
        ({"a": math.inf}, "answer.a: inf is not a finite number"),
        (["ok", "x\udc00"], "answer[1]: 'x\\udc00' is not valid Unicode"),
        ({"\ud800": 1}, "answer: object key '\\ud800' is not valid Unicode"),
        ({"a": {2: "b"}}, "answer.a: object key 2 (int) is not a string"),
        ({"at": b"raw"}, "answer.at: a builtins.bytes is not a JSON value"),
    ],
)
def test_the_problem_names_the_path_and_the_value(value: Any, message: str) -> None:
    assert (storable_problem(value) or "").startswith(message)


def test_the_path_prefix_is_the_callers() -> None:
    assert (storable_problem([2**64], "answers[3].answer") or "").startswith(
        "answers[3].answer[0]:"
    )
