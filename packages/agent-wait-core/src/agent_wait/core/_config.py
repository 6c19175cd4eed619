"""Announcer configuration by entry-point name: Python, a TOML file, or the environment.

Where the configuration comes from, first match wins:

1. ``AGENT_WAIT_ANNOUNCE``: a JSON list of entries, ``[{"use": "sqs", "queue_url": "..."}]``.
2. ``AGENT_WAIT_CONFIG``: the path of a TOML file (``[[announce]]`` tables; a file named
   ``pyproject.toml`` is read from ``[tool.agent-wait]``).
3. ``./agent-wait.toml``: ``[[announce]]`` tables.
4. ``./pyproject.toml``: ``[[tool.agent-wait.announce]]`` tables.
5. The embedded default: one ``sqlite`` announcer at :func:`default_inbox_path`.

Every entry names an installed announcer under ``use``; its other keys are the announcer's
options. An option ending in ``_env`` names an environment variable holding the value, so
secrets stay out of files.
"""

from __future__ import annotations

import contextvars
import difflib
import functools
import hashlib
import json
import logging
import os
import re
import threading
import tomllib
from collections.abc import Generator, Mapping, Sequence
from contextlib import contextmanager
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from pydantic import BaseModel, ConfigDict, Field, field_validator

from agent_wait.core._announce import BaseAnnounce
from agent_wait.core._errors import ConfigError
from agent_wait.core._models import ANSWER_REFUSED_TYPE
from agent_wait.core._options import ENV_SUFFIX, REDACTED, SECRET_NAME, redact
from agent_wait.core._plugins import announcers_from_config, execution_ledger, registry
from agent_wait.core._rules import Rule, parse_rules

if TYPE_CHECKING:
    from agent_wait.core._ledger import ExecutionLedger

logger = logging.getLogger(__name__)

ANNOUNCE_ENV = "AGENT_WAIT_ANNOUNCE"
CONFIG_ENV = "AGENT_WAIT_CONFIG"
CONFIG_FILE = "agent-wait.toml"
PYPROJECT = "pyproject.toml"
PYPROJECT_TABLE = "agent-wait"
# [entry], [approvers] and [[rules]] are read by their own configuration loaders
_KEYS = ("announce", "entry", "approvers", "rules")


class ConfigSource(StrEnum):
    """Where a configuration came from."""

    ANNOUNCE_ENV = ANNOUNCE_ENV
    """The ``AGENT_WAIT_ANNOUNCE`` environment variable."""
    CONFIG_ENV = CONFIG_ENV
    """The TOML file named by ``AGENT_WAIT_CONFIG``."""
    FILE = CONFIG_FILE
    """``./agent-wait.toml``."""
    PYPROJECT = PYPROJECT
    """``[tool.agent-wait]`` in ``./pyproject.toml``."""
    DEFAULT = "default"
    """Nothing configured: the embedded sqlite inbox."""
    PYTHON = "python"
    """Built in code with :meth:`AgentWaitConfig.from_entries`."""


class AnnouncerEntry(BaseModel):
    """One configured announcer: the registered name and its options.

    Attributes:
        use: The announcer's registered (entry-point) name, e.g. ``"sqs"``.
        options: Keyword options of the announcer, as written in the configuration.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    use: str = Field(pattern=r"^[A-Za-z][A-Za-z0-9_-]*$")
    options: dict[str, Any] = Field(default_factory=dict[str, Any])

    @classmethod
    def parse(cls, entry: object, where: str) -> AnnouncerEntry:
        """Validate one ``{"use": name, **options}`` table; errors name ``where``."""
        if not isinstance(entry, Mapping):
            raise ConfigError(f"{where}: expected a table/object with 'use', got {_short(entry)}")
        options = {str(k): v for k, v in cast("Mapping[Any, Any]", entry).items()}
        use = options.pop("use", None)
        if not isinstance(use, str) or not use:
            raise ConfigError(
                f"{where}: 'use' must name an announcer (e.g. \"sqlite\"), got {use!r}"
            )
        if not re.match(r"^[A-Za-z][A-Za-z0-9_-]*$", use):
            raise ConfigError(
                f"{where}: use = {use!r} is not an announcer name; configuration names installed "
                "announcers (see `agent-wait plugins`), never a module path"
            )
        return cls(use=use, options=options)

    def as_mapping(self) -> dict[str, Any]:
        """The entry as written: ``{"use": name, **options}``."""
        return {"use": self.use, **self.options}

    def redacted(self) -> dict[str, Any]:
        """:meth:`as_mapping` with secret-looking option values replaced by ``***``."""
        return {"use": self.use, **cast("dict[str, Any]", redact(self.options))}


class AgentWaitConfig(BaseModel):
    """A loaded configuration: where it came from and the announcer entries.

    Attributes:
        source: Which of the configuration sources was used.
        location: The environment variable or file it was read from (None for the default and
            for Python).
        announce: The announcer entries, in order.
        rules: The ``[[rules]]`` tables, checked when loaded (see ``agent_wait.core._rules``).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    source: ConfigSource
    location: str | None = None
    announce: tuple[AnnouncerEntry, ...]
    rules: tuple[dict[str, Any], ...] = ()

    @field_validator("announce")
    @classmethod
    def _not_empty(cls, value: tuple[AnnouncerEntry, ...]) -> tuple[AnnouncerEntry, ...]:
        if not value:
            raise ValueError("announce: configure at least one announcer, or questions go nowhere")
        return value

    @classmethod
    def from_entries(
        cls,
        entries: Sequence[Mapping[str, Any]],
        source: ConfigSource = ConfigSource.PYTHON,
        location: str | None = None,
    ) -> AgentWaitConfig:
        """Validate ``[{"use": name, **options}, ...]`` into a configuration.

        Raises:
            ConfigError: The entries are malformed; the message names the position.
        """
        where = location or str(source)
        if isinstance(entries, str | bytes | Mapping) or not isinstance(entries, Sequence):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ConfigError(
                f"{where}: announce: expected a list of announcer entries such as "
                f'[{{"use": "sqlite"}}], got {_short(entries)}'
            )
        parsed = tuple(
            AnnouncerEntry.parse(entry, f"{where}: announce[{index}]")
            for index, entry in enumerate(entries)
        )
        if not parsed:
            raise ConfigError(
                f"{where}: announce: configure at least one announcer, or questions go nowhere"
            )
        return cls(source=source, location=location, announce=parsed)

    def build(self) -> list[BaseAnnounce]:
        """Build every announcer (new instances on each call).

        Raises:
            PluginNotFoundError: An entry names an announcer that is not installed.
            ConfigError: An option is unknown or invalid; the message names the entry.
            ImportError: The plugin providing an entry fails to import.
        """
        try:
            return announcers_from_config([entry.as_mapping() for entry in self.announce])
        except ConfigError as error:
            raise type(error)(f"{self.describe()}: {error}") from error

    def describe(self) -> str:
        """Where the configuration came from, for messages."""
        if self.location and self.source is not ConfigSource.CONFIG_ENV:
            return self.location
        if self.location:
            return f"{self.location} (from {CONFIG_ENV})"
        return str(self.source)


def scrub(text: str, options: Mapping[str, Any]) -> str:
    """Text (an error message about a configured announcer) with its secrets hidden.

    The values of secret options and headers, at any depth (also those read through
    ``*_env``), are replaced, then :func:`redact` hides passwords in URLs, DSNs and
    ``name=value`` pairs.
    """
    for secret in _secret_values(options):
        if len(secret) >= 3:  # shorter "secrets" would blank out ordinary words
            text = text.replace(secret, REDACTED)
    return redact(text)


def _secret_values(options: Mapping[str, Any]) -> list[str]:
    found: list[str] = []
    for key, value in options.items():
        if isinstance(value, Mapping):
            found += _secret_values(cast("Mapping[str, Any]", value))
        elif isinstance(value, str) and SECRET_NAME.search(str(key)):
            secret = os.environ.get(value) if str(key).endswith(ENV_SUFFIX) else value
            if secret:
                found.append(secret)
    return found


def _short(value: object, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def load_config(
    *, environ: Mapping[str, str] | None = None, cwd: str | os.PathLike[str] | None = None
) -> AgentWaitConfig:
    """Find and validate the configuration (see the module docstring for the order).

    Args:
        environ: The environment to read (default: ``os.environ``).
        cwd: The directory holding ``agent-wait.toml`` / ``pyproject.toml`` (default: the
            current directory).

    With neither argument, inside :func:`one_configuration` (a host handling a message), the
    configuration read there first.

    Raises:
        ConfigError: Malformed JSON or TOML (the message gives the source and the position),
            a missing ``AGENT_WAIT_CONFIG`` file, unknown keys, or malformed entries.
    """
    held = _held.get() if environ is None and cwd is None else None
    if held:
        return held[0]
    env = os.environ if environ is None else environ
    config = _configured(env, Path.cwd() if cwd is None else Path(cwd)) or _default_config(env)
    if held is not None:
        held.append(config)
    # Loaded on every publish and resume: the redacted entries are built only to be logged.
    if logger.isEnabledFor(logging.DEBUG):
        logger.debug(
            "agent-wait config from %s: %s",
            config.describe(),
            [e.redacted() for e in config.announce],
        )
    return config


# Within one_configuration(): the configuration the first load_config() found, once it ran.
_held: contextvars.ContextVar[list[AgentWaitConfig] | None] = contextvars.ContextVar(
    "agent_wait_config_held", default=None
)


@contextmanager
def one_configuration() -> Generator[None]:
    """Read the configuration at most once inside: each :func:`load_config` returns the same.

    A host handles each message under it: the publish, the ledger, the audit log and the
    trust of one message then agree, and the files and the environment are not read again
    for each of them. It is read on first use, so a message that needs none reads none; an
    invalid one raises there, and again at the next use. Nested uses share the outer one's.
    """
    if _held.get() is not None:
        yield
        return
    token = _held.set([])
    try:
        yield
    finally:
        _held.reset(token)


def _configured(env: Mapping[str, str], base: Path) -> AgentWaitConfig | None:
    """The configuration the environment or a file gives; None: none, the default applies."""
    raw = env.get(ANNOUNCE_ENV)
    if raw is not None and raw.strip():
        try:
            entries = json.loads(raw)
        except json.JSONDecodeError as error:
            raise ConfigError(
                f"{ANNOUNCE_ENV}: invalid JSON at line {error.lineno} column {error.colno}: {error.msg}; "
                'expected a list such as [{"use": "sqlite"}]'
            ) from None
        config = AgentWaitConfig.from_entries(entries, ConfigSource.ANNOUNCE_ENV, ANNOUNCE_ENV)
    elif env.get(CONFIG_ENV):
        path = Path(env[CONFIG_ENV]).expanduser()
        if not path.is_absolute():
            path = base / path
        if not path.is_file():
            raise ConfigError(f"{CONFIG_ENV}={env[CONFIG_ENV]!r}: no such file {str(path)!r}")
        config = _from_toml(path, ConfigSource.CONFIG_ENV, pyproject=path.name == PYPROJECT)
    # os.path, not pathlib, for the two files looked for on every load: it costs a fraction.
    elif os.path.isfile(os.path.join(base, CONFIG_FILE)):
        config = _from_toml(base / CONFIG_FILE, ConfigSource.FILE, pyproject=False)
    elif os.path.isfile(os.path.join(base, PYPROJECT)):
        pyproject = base / PYPROJECT
        # A project without [tool.agent-wait] just uses the default.
        if _tool_table(_read_toml(pyproject)) is not None:
            config = _from_toml(pyproject, ConfigSource.PYPROJECT, pyproject=True)
        else:
            config = None
    else:
        config = None
    return config


def _default_config(environ: Mapping[str, str]) -> AgentWaitConfig:
    from agent_wait.core._sqlite_file import default_inbox_path

    return _default_for(str(default_inbox_path(environ)))


@functools.lru_cache(maxsize=8)
def _default_for(path: str) -> AgentWaitConfig:
    """The default configuration for the inbox at ``path``: one object per path, reused."""
    # The inbox is its own reader: told of a refused answer, it opens the question again.
    refusals = [ANSWER_REFUSED_TYPE]
    return AgentWaitConfig(
        source=ConfigSource.DEFAULT,
        announce=(
            AnnouncerEntry(use="sqlite", options={"path": path, "lifecycle_events": refusals}),
        ),
    )


_toml_cache: dict[Path, tuple[tuple[int, int], dict[str, Any]]] = {}
_toml_lock = threading.Lock()


def _read_toml(path: Path) -> dict[str, Any]:
    # Parsed files are kept by (mtime, size): publishing with the default configuration must
    # not re-parse pyproject.toml every time, yet an edited file is seen at once.
    stat = path.stat()
    stamp = (stat.st_mtime_ns, stat.st_size)
    with _toml_lock:
        cached = _toml_cache.get(path)
    if cached is not None and cached[0] == stamp:
        return cached[1]
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"{path}: invalid TOML: {error}") from None
    except UnicodeDecodeError as error:
        raise ConfigError(f"{path}: not UTF-8 text (byte {error.start})") from None
    with _toml_lock:
        _toml_cache[path] = (stamp, data)
    return data


def _tool_table(data: Mapping[str, Any]) -> object:
    tool = data.get("tool")
    return (
        cast("Mapping[str, Any]", tool).get(PYPROJECT_TABLE) if isinstance(tool, Mapping) else None
    )


def _from_toml(path: Path, source: ConfigSource, *, pyproject: bool) -> AgentWaitConfig:
    data = _read_toml(path)
    where = str(path)
    if pyproject:
        table = _tool_table(data)
        if table is None:
            raise ConfigError(f"{where}: no [tool.{PYPROJECT_TABLE}] table")
        if not isinstance(table, dict):
            raise ConfigError(
                f"{where}: [tool.{PYPROJECT_TABLE}] must be a table, got {_short(table)}"
            )
        data = cast("dict[str, Any]", table)
        where = f"{where} [tool.{PYPROJECT_TABLE}]"
    for key in data:
        if key not in _KEYS:
            close = difflib.get_close_matches(key, _KEYS, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise ConfigError(f"{where}: unknown key {key!r}{hint} (known: {', '.join(_KEYS)})")
    if "announce" not in data:
        raise ConfigError(f'{where}: no announcers; add an [[announce]] table with use = "<name>"')
    config = AgentWaitConfig.from_entries(data["announce"], source, where)
    if "rules" not in data:
        return config
    parse_rules(data["rules"], where)  # a bad rule is an error now, not at the first call
    return config.model_copy(update={"rules": tuple(data["rules"])})


_cache_lock = threading.Lock()
_cached: tuple[str, list[BaseAnnounce]] | None = None


def default_announcers() -> list[BaseAnnounce]:
    """The announcers of the current configuration (``announce=None`` in ``publish``).

    The configuration is looked up on every call, so a changed environment or config file
    takes effect at the next publish. The announcers themselves are reused while the
    configuration (including the values of ``*_env`` variables) stays the same, so their
    clients and connections are not rebuilt for every publish. When it changes, new ones are
    built; the old ones are not closed, because another thread may still be delivering with
    them.

    Raises:
        ConfigError: The configuration is invalid (see :func:`load_config`).
    """
    global _cached
    config = load_config()
    key = _fingerprint(config)
    with _cache_lock:
        if _cached is not None and _cached[0] == key:
            return list(_cached[1])
    built = config.build()
    with _cache_lock:
        _cached = (key, built)
    return list(built)


def _fingerprint(config: AgentWaitConfig) -> str:
    # The values behind *_env options are part of the identity (a rotated secret must reach a
    # new client), hashed so the cache key never holds them in the clear.
    material: list[Any] = []
    for entry in config.announce:
        variables = {
            k: os.environ.get(v)
            for k, v in entry.options.items()
            if k.endswith(ENV_SUFFIX) and isinstance(v, str)
        }
        material.append([entry.use, entry.options, variables])
    text = json.dumps(material, sort_keys=True, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


_ledger_lock = threading.Lock()
_ledger_cached: tuple[str, ExecutionLedger] | None = None


def configured_ledger() -> ExecutionLedger:
    """The ledger beside the configured questions: as the question store is found.

    The first configured announcer whose plugin registers a ledger under its name
    (``register_execution_ledgers``: ``sqlite`` in core, ``postgres``) built with that
    announcer's options; else the sqlite ledger in the default inbox file. Reused while the
    configuration stays the same.

    Raises:
        ConfigError: The configuration is invalid, or a ledger's options are.
    """
    global _ledger_cached
    # Here, not at import: loading the configuration builds no ledger.
    from agent_wait.core._ledger import SqliteLedger
    from agent_wait.core._sqlite_file import default_inbox_path

    config = load_config()
    # The default file moves with AGENT_WAIT_HOME, which a configuration other than the default
    # does not name (the default one names it: its fingerprint has the path).
    inbox = "" if config.source is ConfigSource.DEFAULT else str(default_inbox_path())
    key = f"{_fingerprint(config)} {inbox}"
    with _ledger_lock:
        if _ledger_cached is not None and _ledger_cached[0] == key:
            return _ledger_cached[1]
    registered = registry().execution_ledgers
    entry = next((e for e in config.announce if e.use in registered), None)
    built = SqliteLedger() if entry is None else execution_ledger(entry.use, **entry.options)
    with _ledger_lock:
        _ledger_cached = (key, built)
    return built


_rules_lock = threading.Lock()
_rules_cached: tuple[tuple[dict[str, Any], ...], tuple[Rule, ...]] | None = None


def configured_rules() -> tuple[Rule, ...]:
    """The ``[[rules]]`` of the current configuration (none when it has none)."""
    global _rules_cached
    # The default configuration has no rules: a run that parks need not work out where the
    # default inbox lives (platformdirs) to learn that.
    config = _configured(os.environ, Path.cwd())
    if config is None:
        return ()
    with _rules_lock:
        if _rules_cached is not None and _rules_cached[0] == config.rules:
            return _rules_cached[1]
    parsed = parse_rules(list(config.rules), config.describe())
    with _rules_lock:
        _rules_cached = (config.rules, parsed)
    return parsed
