"""Plugin options as pydantic models, and the one routine that hides secrets in what is shown.

Every announcer has one :class:`AnnouncerOptions` model, declared or derived from its
constructor (:func:`signature_options_model`). Configuration, the constructor,
``agent-wait config check`` and ``agent-wait plugins --json`` all go through it, so an option is
validated, named in errors, redacted and described (JSON Schema) the same way everywhere.
"""

from __future__ import annotations

import difflib
import inspect
import os
import re
import typing
import warnings
from collections.abc import Callable, Mapping, Sequence
from datetime import timedelta
from typing import Annotated, Any, ClassVar, Self, cast, get_args, overload

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    GetJsonSchemaHandler,
    PydanticUserError,
    SecretBytes,
    SecretStr,
    Strict,
    TypeAdapter,
    ValidationError,
    WithJsonSchema,
    create_model,
)
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema, ErrorDetails

from agent_wait.core._errors import ConfigError

REDACTED = "***"
ENV_SUFFIX = "_env"

# Names (option keys, header names, query parameters, libpq keywords) whose values are secret.
# Ordinary names that merely end in "key" (routing_key, dedupe_key) are not.
SECRET_NAME = re.compile(
    r"secret|passw|pwd|token|credential|auth|cookie|private|signature|session|api[-_]?key|"
    r"access[-_]?key|^key$|^sig$|^x-amz-security-token$",
    re.IGNORECASE,
)
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
# A URL inside free text ends at whitespace or a quote.
_URL_IN_TEXT = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>]*")
# libpq keyword/value pairs (``password=x``, ``password = 'a b'``), also inside free text.
# An unquoted value runs on over following words that are not themselves ``name=``: a password
# with a space in a malformed string is hidden whole.
_KEYWORD_VALUE = re.compile(
    r"(?P<key>\b[A-Za-z_][A-Za-z0-9_.-]*)(?P<eq>\s*=\s*)"
    r"(?P<value>'(?:[^'\\]|\\.)*'?|[^\s&'\"]+(?:\s+(?![A-Za-z_][A-Za-z0-9_.-]*\s*=)[^\s&'\"]+)*)"
)


@overload
def redact(value: str) -> str: ...
@overload
def redact(value: object) -> object: ...
def redact(value: object) -> object:
    """A copy of ``value`` safe to show: secrets in URLs, DSNs and header or option maps hidden.

    - A URL keeps its scheme, user name, host, path and harmless query parameters; the password
      (everything up to the last ``@`` of the authority, so a password may contain ``@``), a
      bare token in the userinfo, and the values of secret query parameters (``password``,
      ``token``, ``access_token``, ``key``, ``X-Amz-Signature``, ...) become ``***``.
    - A libpq keyword string (``host=db password=x``) or any text with ``name=value`` pairs has
      the values of secret names hidden; URLs inside text are redacted as above.
    - A mapping (options, HTTP headers) has the values of secret-looking keys hidden
      (``Authorization``, ``Cookie``, ``X-Api-Key``, ``password``, ...); a ``*_env`` key names an
      environment variable and is shown. Other values are redacted recursively.
    - :class:`~pydantic.SecretStr` and :class:`~pydantic.SecretBytes` are always hidden.
    """
    if isinstance(value, SecretStr | SecretBytes):
        return REDACTED
    if isinstance(value, str):
        return _redact_text(value)
    if isinstance(value, Mapping):
        items = cast("Mapping[object, object]", value)
        return {
            key: REDACTED if _secret_key(str(key)) and value is not None else redact(value)
            for key, value in items.items()
        }
    if isinstance(value, list | tuple):
        return [redact(item) for item in cast("Sequence[object]", value)]
    return value


def _secret_key(name: str) -> bool:
    return bool(SECRET_NAME.search(name)) and not name.endswith(ENV_SUFFIX)


def _redact_text(text: str) -> str:
    if _SCHEME.match(text):
        parts = text.split(",")
        if len(parts) > 1 and all(_SCHEME.match(part.strip()) for part in parts):
            return ",".join(_redact_url(part) for part in parts)  # a list of servers
        # A whole value that is a URL: its password may contain spaces or quotes.
        return _redact_url(text)
    text = _URL_IN_TEXT.sub(lambda m: _redact_url(m.group(0)), text)
    return _KEYWORD_VALUE.sub(_hide_keyword_value, text)


def _hide_keyword_value(match: re.Match[str]) -> str:
    if not _secret_key(match["key"]) or match["value"] == REDACTED:
        return match.group(0)
    return f"{match['key']}{match['eq']}{REDACTED}"


def _redact_url(url: str) -> str:
    scheme, _, rest = url.partition("://")
    # The authority ends at the first '/', '?' or '#' after the last '@' of the userinfo, so
    # the userinfo is everything up to the last '@' before any '?' or '#'.
    end = min((i for i in (rest.find("?"), rest.find("#")) if i >= 0), default=len(rest))
    head, tail = rest[:end], rest[end:]
    if "@" in head:
        userinfo, _, host = head.rpartition("@")
        user, colon, _password = userinfo.partition(":")
        head = f"{user}:{REDACTED}@{host}" if colon and user else f"{REDACTED}@{host}"
    if tail.startswith("?"):
        query, hash_, fragment = tail[1:].partition("#")
        tail = "?" + "&".join(_hide_parameter(p) for p in query.split("&")) + hash_ + fragment
    return f"{scheme}://{head}{tail}"


def _hide_parameter(parameter: str) -> str:
    name, eq, _value = parameter.partition("=")
    return f"{name}={REDACTED}" if eq and _secret_key(name) else parameter


def _holds_secret(annotation: object) -> bool:
    # SecretStr, SecretBytes, or a union/Annotated holding one.
    if annotation is SecretStr or annotation is SecretBytes:
        return True
    return any(_holds_secret(arg) for arg in get_args(annotation))


def _not_bool(value: object) -> object:
    # pydantic turns True into 1 in lax mode; as a number of seconds or a count it is a mistake.
    if isinstance(value, bool):
        raise ValueError("expected a number, not true/false")
    return value


class Sensitive:
    """Marks an option shown only through :func:`redact` (a URL or DSN with credentials).

    Errors, logs and ``agent-wait config check`` show it redacted. ``Annotated[str, Sensitive()]``. Options typed :class:`~pydantic.SecretStr` are hidden
    entirely; options of other types are shown as given.
    """

    def __get_pydantic_json_schema__(
        self, schema: CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        return {**handler(schema), "writeOnly": True, "x-redacted": True}

    def __repr__(self) -> str:
        return "Sensitive()"


_TRAILING_VALUE = re.compile(r", got [^,]*$")


def _duration_seconds(value: object) -> object:
    from agent_wait.core._durations import parse_duration

    if isinstance(value, timedelta):
        value = value.total_seconds()
    try:
        return parse_duration(value, "duration").total_seconds()
    except ValueError as error:
        # The option and the value are named by the error format itself.
        raise ValueError(_TRAILING_VALUE.sub("", str(error).removeprefix("duration: "))) from None


def _duration_or_zero(value: object) -> object:
    return 0.0 if value == 0 and not isinstance(value, bool) else _duration_seconds(value)


NotBool = BeforeValidator(_not_bool)
"""Refuses ``true``/``false`` where a number is expected (pydantic would read them as 1 and 0).

Place it after the constraints, which then stay in the JSON Schema:
``Annotated[float, Field(ge=1, le=43200), NotBool]``."""
Seconds = Annotated[float, Field(gt=0), NotBool]
"""A positive number of seconds."""
Duration = Annotated[
    float,
    BeforeValidator(_duration_seconds),
    WithJsonSchema(
        {
            "anyOf": [
                {"type": "number", "exclusiveMinimum": 0},
                {"type": "string", "description": "ISO 8601 duration such as PT10S or P3D"},
            ]
        }
    ),
]
"""A positive duration, as seconds: a number of seconds, an ISO 8601 duration (``"PT10S"``) or
a :class:`~datetime.timedelta`."""
DurationOrZero = Annotated[
    float,
    BeforeValidator(_duration_or_zero),
    WithJsonSchema(
        {
            "anyOf": [
                {"type": "number", "minimum": 0},
                {"type": "string", "description": "ISO 8601 duration such as PT10S or P3D"},
            ]
        }
    ),
]
"""Like :data:`Duration`, and 0 is allowed (``backoff = 0`` retries at once)."""
Count = Annotated[int, Field(ge=0), NotBool]
"""A whole number, zero or more."""
PositiveCount = Annotated[int, Field(gt=0), NotBool]
"""A whole number, one or more."""
SecondsOrZero = Annotated[float, Field(ge=0), NotBool]
"""A number of seconds, zero or more (``retry_delay = 0`` retries at once)."""
Flag = Annotated[bool, Strict()]
"""``true`` or ``false`` exactly (not ``1``, not ``"yes"``)."""
Text = Annotated[str, Field(min_length=1)]
"""A non-empty string."""
SensitiveUrl = Annotated[str, Sensitive()]
"""A URL or connection string that may carry a password: always shown redacted."""


class PluginOptions(BaseModel):
    """Base of the options model of a plugin kind (:class:`AnnouncerOptions`, :class:`EntryOptions`).

    Subclass it with one field per option, validated by pydantic. :meth:`parse` turns
    configuration values into the model or raises :class:`ConfigError` in one format:
    ``<kind> '<name>': option '<field>': <why> (got <value>)`` with the value redacted. An option
    ``X_env`` names an environment variable holding the value of option ``X``.
    """

    # Attribute docstrings become the options' descriptions in the JSON Schema.
    model_config = ConfigDict(
        extra="forbid",
        frozen=True,
        arbitrary_types_allowed=True,
        hide_input_in_errors=True,
        use_attribute_docstrings=True,
    )

    kind: ClassVar[str] = "plugin"
    """What the options configure, for messages (``"announcer"``)."""

    @classmethod
    def resolve(cls, name: str, values: Mapping[str, Any]) -> dict[str, Any]:
        """The values with ``X_env`` options read from the environment; unknown names refused.

        Raises:
            ConfigError: An option is unknown (with a close match when there is one), given
                both directly and through ``_env``, or names an unset environment variable.
        """
        return cls._resolve(name, values)[0]

    @classmethod
    def _resolve(
        cls, name: str, values: Mapping[str, Any]
    ) -> tuple[dict[str, Any], dict[str, str]]:
        fields = cls.model_fields
        resolved = dict(values)
        variables: dict[str, str] = {}
        for key, variable in values.items():
            target = key.removesuffix(ENV_SUFFIX)
            if key in fields or key == target or target not in fields:
                continue
            del resolved[key]
            if variable is None:  # a constructor passing its unused `secret_env=None`
                continue
            if values.get(target) is not None:
                raise ConfigError(f"{cls.kind} {name!r}: give {target!r} or {key!r}, not both")
            if not isinstance(variable, str) or not variable:
                raise ConfigError(
                    f"{cls.kind} {name!r}: option {key!r} must name an environment variable, "
                    f"got {variable!r}"
                )
            value = os.environ.get(variable)
            if value is None:
                raise ConfigError(
                    f"{cls.kind} {name!r}: option {key!r} names environment variable "
                    f"{variable!r}, which is not set"
                )
            resolved[target] = value
            variables[target] = variable
        for key in resolved:
            if key not in fields:
                close = difflib.get_close_matches(key, list(fields), n=1)
                hint = f"; did you mean {close[0]!r}?" if close else ""
                raise ConfigError(
                    f"{cls.kind} {name!r}: unknown option {key!r}{hint} "
                    f"(accepted: {', '.join(fields) or 'none'})"
                )
        return resolved, variables

    @classmethod
    def parse(cls, name: str, values: Mapping[str, Any]) -> Self:
        """Validate configuration values (see :meth:`resolve` for ``_env``) into the model.

        Args:
            name: The plugin's name, for messages (``announcer 'redis': ...``).
            values: Option names to values, as configured or as given to the constructor.

        Raises:
            ConfigError: An option is unknown, missing or invalid; the message names the
                plugin, every offending option and its value (redacted).
        """
        resolved, variables = cls._resolve(name, values)
        try:
            return cls.model_validate(resolved)
        except ValidationError as error:
            problems = [
                cls._problem(item, resolved, variables) for item in error.errors(include_url=False)
            ]
            raise ConfigError(f"{cls.kind} {name!r}: {'; '.join(problems)}") from None

    @classmethod
    def _problem(
        cls, item: ErrorDetails, values: Mapping[str, Any], variables: Mapping[str, str]
    ) -> str:
        loc = item["loc"]
        option = str(loc[0]) if loc else ""
        if item["type"] == "missing":
            return f"missing required option {option!r}"
        ctx: dict[str, Any] = item.get("ctx") or {}
        # A validator's own ValueError: its text without pydantic's "Value error, " prefix.
        why = str(ctx["error"]) if item["type"] == "value_error" and "error" in ctx else item["msg"]
        where = "".join(f"[{part!r}]" for part in loc[1:])
        if option in variables:
            where += f" (from environment variable {variables[option]!r})"
        shown = cls.shown(option, values.get(option)) if option else REDACTED
        return f"option {option!r}{where}: {why} (got {shown!r})" if option else why

    @classmethod
    def option_error(cls, name: str, option: str, why: str, value: object) -> ConfigError:
        """A :class:`ConfigError` in the format of :meth:`parse`.

        For a check the model cannot make itself, one that needs the transport's library.
        """
        return ConfigError(
            f"{cls.kind} {name!r}: option {option!r}: {why} (got {cls.shown(option, value)!r})"
        )

    @classmethod
    def shown(cls, option: str, value: object) -> object:
        """``value`` of ``option`` as it may be shown: hidden when the option is a secret."""
        field = cls.model_fields.get(option)
        secret = field is not None and _holds_secret(field.annotation)
        if secret or _secret_key(option):
            return REDACTED if value is not None else None
        return redact(value)

    @classmethod
    def shown_options(cls, values: Mapping[str, Any]) -> dict[str, Any]:
        """Every option as it may be shown (``agent-wait config check``, logs)."""
        return {key: cls.shown(key, value) for key, value in values.items()}

    @classmethod
    def json_schema(cls) -> dict[str, Any]:
        """The JSON Schema (draft 2020-12) of the options as configuration writes them."""
        return cls.model_json_schema(mode="validation")

    def __repr_args__(self) -> Any:
        # The repr of a model shows every field: sensitive ones go through redact().
        for key, value in super().__repr_args__():
            yield key, (self.shown(key, value) if key is not None else value)


class AnnouncerOptions(PluginOptions):
    """Base of every announcer's options model.

    Declare one per announcer and set it as the announcer class's ``options_model``; validate
    the constructor's arguments with ``MyOptions.parse(self.name, {...})``::

        class CarrierPigeonOptions(AnnouncerOptions):
            loft: Text
            api_token: SecretStr
            timeout: Seconds = 5.0

        class CarrierPigeonAnnounce(BaseAnnounce):
            name = "carrier-pigeon"
            options_model = CarrierPigeonOptions

            def __init__(self, loft: str, api_token: str, timeout: float = 5.0) -> None:
                options = CarrierPigeonOptions.parse(
                    self.name, {"loft": loft, "api_token": api_token, "timeout": timeout}
                )
    """

    kind: ClassVar[str] = "announcer"


class EntryOptions(PluginOptions):
    """Base of every entry point's options model.

    Declare one per entry point, set it as the entry point class's ``options_model``, and
    validate the constructor's arguments with it, as an announcer does::

        class CarrierPigeonEntryOptions(EntryOptions):
            loft: Text
            visibility_timeout: Seconds = 300.0
            max_attempts: PositiveCount = 5

        class CarrierPigeonEntry(EntryPoint):
            name = "carrier-pigeon"
            options_model = CarrierPigeonEntryOptions

            def __init__(
                self, loft: str, visibility_timeout: float = 300.0, max_attempts: int = 5
            ) -> None:
                options = CarrierPigeonEntryOptions.parse(
                    self.name,
                    {"loft": loft, "visibility_timeout": visibility_timeout,
                     "max_attempts": max_attempts},
                )

    Errors read ``entry point '<name>': option '<field>': <why> (got <value>)``.
    """

    kind: ClassVar[str] = "entry point"


_Model = typing.TypeVar("_Model", bound=PluginOptions)


def signature_options_model(factory: Callable[..., Any], base: type[_Model]) -> type[_Model] | None:
    """An options model derived from the constructor of a plugin that declares none.

    A plugin written before options models existed names its options as constructor
    parameters; this model gives it the same checks and JSON Schema a declared one gives. One
    field per keyword parameter, typed by its annotation (unannotated: any value), required
    unless it has a default. A parameter ``X_env`` next to a parameter ``X`` gets no field:
    :meth:`PluginOptions.resolve` reads it, as for a declared model. The descriptions come from
    the ``Args:`` section of the class or function docstring.

    Args:
        factory: The registered class or callable.
        base: The options base of its kind (:class:`AnnouncerOptions`, :class:`EntryOptions`).

    Returns:
        The model, or None when the constructor has no signature or takes ``**kwargs`` (its
        options cannot be named).
    """
    try:
        parameters = inspect.signature(factory).parameters
    except (TypeError, ValueError):
        return None
    if any(p.kind is p.VAR_KEYWORD for p in parameters.values()):
        return None
    function = cast(
        "Callable[..., Any]", factory.__init__ if isinstance(factory, type) else factory
    )
    hints = _type_hints(function)
    described = _documented_arguments(factory)
    names = {p.name for p in parameters.values()}
    fields: dict[str, Any] = {}
    for parameter in parameters.values():
        if parameter.kind not in (parameter.POSITIONAL_OR_KEYWORD, parameter.KEYWORD_ONLY):
            continue
        if parameter.name.endswith(ENV_SUFFIX) and parameter.name.removesuffix(ENV_SUFFIX) in names:
            continue
        default = ... if parameter.default is parameter.empty else parameter.default
        field = Field(default, description=described.get(parameter.name))
        fields[parameter.name] = (_schema_safe(hints.get(parameter.name, Any)), field)
    title = f"{getattr(factory, '__name__', 'Plugin')}Options"
    try:
        with warnings.catch_warnings():
            # A parameter named like a BaseModel attribute (``json``) is still an option.
            warnings.simplefilter("ignore")
            return create_model(title, __base__=base, __module__=base.__module__, **fields)
    except (PydanticUserError, TypeError, NameError):
        return None


def _type_hints(function: Callable[..., Any]) -> dict[str, Any]:
    try:
        return typing.get_type_hints(function, include_extras=True)
    except Exception:  # noqa: BLE001 - a name only imported for type checking: hint by hint
        pass
    hints: dict[str, Any] = {}
    namespace = getattr(function, "__globals__", {})
    for name, annotation in getattr(function, "__annotations__", {}).items():
        try:
            hints[name] = eval(annotation, namespace) if isinstance(annotation, str) else annotation
        except Exception:  # noqa: BLE001 - unresolvable: any value
            hints[name] = Any
    return hints


def _schema_safe(annotation: Any) -> Any:
    # A client object or other arbitrary class validates by isinstance but has no JSON Schema:
    # shown as "any value" rather than failing `agent-wait plugins --json`.
    try:
        TypeAdapter(annotation, config=ConfigDict(arbitrary_types_allowed=True)).json_schema()
    except Exception:  # noqa: BLE001 - pydantic raises several types for schemaless annotations
        return Annotated[annotation, WithJsonSchema({})]
    return annotation


_ARGUMENT = re.compile(r"^(?P<name>\w+)(?: \([^)]*\))?: (?P<text>.*)$")


def _documented_arguments(factory: object) -> dict[str, str]:
    """Argument descriptions from a Google-style ``Args:`` section."""
    lines = inspect.cleandoc(getattr(factory, "__doc__", None) or "").splitlines()
    found: dict[str, str] = {}
    current: str | None = None
    inside = False
    for line in lines:
        if line.strip() in ("Args:", "Arguments:"):
            inside = True
            continue
        if not inside:
            continue
        if line and not line.startswith(" "):
            break  # the next section
        # An argument starts one indent in; its continuation lines are indented further.
        nested = line.startswith("     ")
        match = None if nested else _ARGUMENT.match(line.strip())
        if match:
            current = str(match["name"])
            found[current] = str(match["text"]).strip()
        elif current and line.strip():
            found[current] += " " + line.strip()
    return found
