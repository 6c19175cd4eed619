"""Every announcer's and entry point's options: the committed JSON Schemas and the documented
option tables."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from agent_wait.core._options import ENV_SUFFIX, EntryOptions
from agent_wait.core._plugins import options_model, registry
from agent_wait.host._cli import options_schema_text

DOCS = Path(__file__).resolve().parents[2] / "docs"
FIRST_PARTY = (
    "memory",
    "log",
    "jsonl",
    "sqlite",
    "sqs",
    "sns",
    "eventbridge",
    "dynamodb",
    "webhook",
    "redis",
    "nats",
    "rabbitmq",
    "postgres",
    "apprise",
    "email",
    "slack",
)
DOCUMENTED = [name for name in FIRST_PARTY if (DOCS / "announcers" / f"{name}.md").is_file()]


def _installed(name: str) -> None:
    if name not in registry().announcers:
        pytest.skip(f"announcer {name!r} is not installed")


@pytest.mark.parametrize("name", FIRST_PARTY)
def test_committed_options_schema_is_current(name: str) -> None:
    _installed(name)
    committed = (DOCS / "schema" / "options" / f"{name}.schema.json").read_text(encoding="utf-8")
    assert committed == options_schema_text(name), (
        f"docs/schema/options/{name}.schema.json is stale; regenerate it: "
        f"agent-wait schema --announcer {name} > docs/schema/options/{name}.schema.json"
    )


@pytest.mark.parametrize("name", DOCUMENTED)
def test_the_documented_options_are_the_models(name: str) -> None:
    _installed(name)
    model = options_model(registry().announcers[name].resolve())
    assert model is not None
    text = (DOCS / "announcers" / f"{name}.md").read_text(encoding="utf-8")
    section = text.split("## Options", 1)[1].split("\n## ", 1)[0]
    documented = set(re.findall(r"^\| `([a-z_]+)` \|", section, flags=re.MULTILINE))
    fields = set(model.model_fields)
    env_rows = {n for n in documented - fields if n.removesuffix(ENV_SUFFIX) in fields}
    assert documented - env_rows == fields, (
        f"docs/announcers/{name}.md documents {sorted(documented - env_rows)}, "
        f"the options model has {sorted(fields)}"
    )
    assert f"schema/options/{name}.schema.json" in section, "the page links its options schema"


ENTRY_POINTS = ("sqlite", "sqs", "redis", "postgres", "nats", "rabbitmq", "webhook")


def _entry_installed(name: str) -> None:
    if name not in registry().entry_points:
        pytest.skip(f"entry point {name!r} is not installed")


@pytest.mark.parametrize("name", ENTRY_POINTS)
def test_committed_entry_options_schema_is_current(name: str) -> None:
    _entry_installed(name)
    committed = (DOCS / "schema" / "entry" / f"{name}.schema.json").read_text(encoding="utf-8")
    assert committed == options_schema_text(name, "entry point"), (
        f"docs/schema/entry/{name}.schema.json is stale; regenerate it: "
        f"agent-wait schema --entry {name} > docs/schema/entry/{name}.schema.json"
    )


@pytest.mark.parametrize("name", ENTRY_POINTS)
def test_the_documented_entry_options_are_the_models(name: str) -> None:
    _entry_installed(name)
    model = options_model(registry().entry_points[name].resolve(), EntryOptions)
    assert model is not None
    text = (DOCS / "entry-points.md").read_text(encoding="utf-8")
    section = text.split(f"## The `{name}` entry point", 1)[1].split("\n## ", 1)[0]
    documented = set(re.findall(r"^\| `([a-z_]+)` \|", section, flags=re.MULTILINE))
    assert documented == set(model.model_fields), (
        f"docs/entry-points.md documents {sorted(documented)} for {name!r}, "
        f"the options model has {sorted(model.model_fields)}"
    )
    assert f"schema/entry/{name}.schema.json" in section, "the section links its options schema"


@pytest.mark.parametrize("kind", ["options", "entry"])
def test_committed_schemas_use_only_json_schema_keywords(kind: str) -> None:
    """A pydantic constraint placed after a validator lands in the schema as ``ge``/``le``."""
    for path in sorted((DOCS / "schema" / kind).glob("*.schema.json")):
        keys = set(re.findall(r'"(\w+)":', path.read_text(encoding="utf-8")))
        assert not keys & {"ge", "gt", "le", "lt"}, (
            f"{path.name}: {sorted(keys & {'ge', 'gt', 'le', 'lt'})}"
        )
