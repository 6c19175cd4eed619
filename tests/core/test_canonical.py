"""Canonical JSON and derived question ids are stable and fail loudly on unserialisable data."""

from __future__ import annotations

import dataclasses
import enum
import hashlib
import subprocess
import sys
import uuid
from datetime import UTC, date, datetime, timedelta, timezone
from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel

from agent_wait.core import canonical_json, derive_question_id


class Color(enum.Enum):
    RED = "red"


@dataclasses.dataclass
class Point:
    x: int
    y: float


class Item(BaseModel):
    sku: str
    price: Decimal


def test_documented_renderings() -> None:
    value = {
        "dt": datetime(2026, 1, 2, 5, 4, 5, tzinfo=timezone(timedelta(hours=2))),
        "naive": datetime(2026, 1, 2, 3, 4, 5),
        "day": date(2026, 1, 2),
        "money": Decimal("10.50"),
        "whole": Decimal("3.000"),
        "float_whole": 3.0,
        "uuid": uuid.UUID("12345678-1234-5678-1234-567812345678"),
        "enum": Color.RED,
        "bytes": b"\x00\xff",
        "point": Point(1, 2.5),
        "model": Item(sku="A", price=Decimal("1.25")),
        "tuple": (1, 2),
        "set": {3, 1, 2},
        "text": "café",
    }
    assert canonical_json(value) == (
        '{"bytes":"AP8=","day":"2026-01-02","dt":"2026-01-02T03:04:05Z","enum":"red",'
        '"float_whole":3,"model":{"price":"1.25","sku":"A"},"money":10.5,"naive":"2026-01-02T03:04:05",'
        '"point":{"x":1,"y":2.5},"set":[1,2,3],"text":"café","tuple":[1,2],'
        '"uuid":"12345678-1234-5678-1234-567812345678","whole":3}'
    )


def test_number_forms_agree() -> None:
    assert (
        canonical_json({"a": 1})
        == canonical_json({"a": 1.0})
        == canonical_json({"a": Decimal("1.00")})
    )
    assert canonical_json({"a": 0.1}) == canonical_json({"a": Decimal("0.1")})
    assert canonical_json(Decimal("0.10000000000000000001")) == '"0.10000000000000000001"'


def test_question_id_is_the_documented_sha256() -> None:
    expected = hashlib.sha256(
        b'order-4471|issue_refund|{"amount":41000,"order_id":"order-4471"}'
    ).hexdigest()
    assert (
        derive_question_id(
            "order-4471", "issue_refund", {"order_id": "order-4471", "amount": 41000}
        )
        == expected
    )


def test_question_id_is_stable_across_processes_and_python_versions() -> None:
    code = (
        "from agent_wait.core import derive_question_id;"
        "print(derive_question_id('t', 'f', {'b': [1, 2.0, {'z': 'é', 'a': None}], 'a': True}))"
    )
    here = derive_question_id("t", "f", {"a": True, "b": [1, 2, {"a": None, "z": "é"}]})
    other = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert other.stdout.strip() == here


@pytest.mark.parametrize(
    "bad",
    [object(), float("nan"), {"k": float("inf")}, {"k": {1j: 1}}, Decimal("NaN"), lambda: 1],
)
def test_unserialisable_values_fail_with_a_path(bad: object) -> None:
    with pytest.raises(TypeError, match=r"\$"):
        canonical_json({"arg": bad})


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=20,
)


@given(st.dictionaries(st.text(max_size=8), json_values, max_size=6))
def test_ids_ignore_dict_order(args: dict[str, object]) -> None:
    reordered = dict(reversed(list(args.items())))
    assert derive_question_id("t", "f", args) == derive_question_id("t", "f", reordered)


@given(json_values)
def test_canonical_json_is_a_fixed_point(value: object) -> None:
    import json

    text = canonical_json(value)
    assert canonical_json(json.loads(text)) == text


def test_aware_datetimes_in_any_zone_agree() -> None:
    utc = datetime(2026, 1, 1, 12, tzinfo=UTC)
    assert canonical_json(utc) == canonical_json(utc.astimezone(timezone(timedelta(hours=-5))))
