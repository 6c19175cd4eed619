"""The options-model check the announcer and entry point kits share."""

from __future__ import annotations

import inspect
import json

from agent_wait.core._options import ENV_SUFFIX, PluginOptions


def assert_options_model_matches(cls: type, base: type[PluginOptions]) -> None:
    """``cls.options_model`` is a ``base`` subclass with one field per constructor argument.

    An ``X_env`` argument of a field ``X`` needs no field of its own. The model's JSON Schema
    (the one ``agent-wait plugins --json`` prints) must serialise.
    """
    model = getattr(cls, "options_model", None)
    wrong = f"{cls.__name__}.options_model is {model!r}, not a subclass of {base.__name__}"
    assert isinstance(model, type), wrong
    assert issubclass(model, base), wrong
    parameters = inspect.signature(cls).parameters.values()
    accepted = {p.name for p in parameters if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)}
    fields = set(model.model_fields)
    extra = {n for n in accepted - fields if n.removesuffix(ENV_SUFFIX) not in fields}
    assert not extra, f"constructor arguments without an options field: {sorted(extra)}"
    assert not fields - accepted, (
        f"options fields the constructor does not take: {sorted(fields - accepted)}"
    )
    json.dumps(model.json_schema())
