"""The options-model check the announcer and entry point kits share."""

from __future__ import annotations

import inspect
import json

from agent_wait.core._options import ENV_SUFFIX, PluginOptions
from agent_wait.core._plugins import options_model


def assert_options_model_matches(cls: type, base: type[PluginOptions]) -> None:
    """The options model of ``cls`` has one field per constructor argument.

    The model is ``cls.options_model`` when the class declares one (a ``base`` subclass), else
    the one core derives from the constructor's signature, which then must name its options
    (no ``**kwargs``). An ``X_env`` argument of a field ``X`` needs no field of its own. The
    model's JSON Schema (the one ``agent-wait plugins --json`` prints) must serialise.
    """
    declared = getattr(cls, "options_model", None)
    if declared is not None:
        wrong = f"{cls.__name__}.options_model is {declared!r}, not a subclass of {base.__name__}"
        assert isinstance(declared, type), wrong
        assert issubclass(declared, base), wrong
    model = options_model(cls, base)
    assert model is not None, (
        f"{cls.__name__} declares no options_model and its constructor takes **kwargs, so its "
        "options cannot be named: declare an options_model or name each option as a parameter"
    )
    parameters = inspect.signature(cls).parameters.values()
    accepted = {p.name for p in parameters if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)}
    fields = set(model.model_fields)
    extra = {n for n in accepted - fields if n.removesuffix(ENV_SUFFIX) not in fields}
    assert not extra, f"constructor arguments without an options field: {sorted(extra)}"
    assert not fields - accepted, (
        f"options fields the constructor does not take: {sorted(fields - accepted)}"
    )
    json.dumps(model.json_schema())
