"""Entry points by registered name, and their configuration.

Where the entry point comes from, first match wins (the same sources as the announcers):

1. ``AGENT_WAIT_ENTRY``: a JSON object, ``{"use": "sqlite", "path": "..."}``.
2. ``AGENT_WAIT_CONFIG``: the ``[entry]`` table of that TOML file (``[tool.agent-wait.entry]``
   in a ``pyproject.toml``).
3. ``./agent-wait.toml``: its ``[entry]`` table.
4. ``./pyproject.toml``: ``[tool.agent-wait.entry]``.
5. The embedded default: the ``sqlite`` entry point in the inbox's database file.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

from agent_wait.core._config import (
    CONFIG_ENV,
    CONFIG_FILE,
    PYPROJECT,
    PYPROJECT_TABLE,
    AnnouncerEntry,
    _read_toml,  # pyright: ignore[reportPrivateUsage]
    _tool_table,  # pyright: ignore[reportPrivateUsage]
)
from agent_wait.core._entry import EntryPoint
from agent_wait.core._errors import ConfigError, PluginNotFoundError
from agent_wait.core._options import EntryOptions
from agent_wait.core._plugins import (
    _not_installed,  # pyright: ignore[reportPrivateUsage]
    build_plugin,
    options_model,
    registry,
)
from agent_wait.core._reply_to import check_reply_to, is_credential

ENTRY_ENV = "AGENT_WAIT_ENTRY"
_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_-]*$")


def entry(name: str, /, **options: Any) -> EntryPoint:
    """Build an entry point by its registered name, validating its options against its model.

    ``*_env`` options name environment variables holding secrets, as for announcers.

    Example:
        ``entry("sqlite", path="inbox.sqlite3", max_attempts=3)``

    Raises:
        PluginNotFoundError: No entry point of that name is installed (the message lists the
            installed ones and a close match).
        ConfigError: The name is not a plain name, or an option is unknown, missing or invalid
            (the message names the entry point, the option and its value, redacted).
    """
    if not isinstance(name, str) or not _NAME.match(name):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise ConfigError(
            f"entry point name {name!r} is not a plain name like 'sqlite'; configuration names "
            "installed entry points (see `agent-wait plugins`), never a module path"
        )
    reg = registry()
    registration = reg.entry_points.get(name)
    if registration is None:
        raise PluginNotFoundError(_not_installed("entry point", name, reg.entry_points))
    factory = registration.resolve()
    model = options_model(factory, EntryOptions)
    if model is None:
        raise ConfigError(
            f"entry point {name!r}: {registration.target!r} declares no options model and its "
            "constructor takes **kwargs; set its class attribute options_model to an "
            "EntryOptions subclass"
        )
    built = build_plugin("entry point", name, factory, model, options)
    if not isinstance(built, EntryPoint):
        raise ConfigError(
            f"entry point {name!r} factory returned {type(built).__name__}, not an EntryPoint"
        )
    built.name = name
    return built


def load_entry_config(
    *, environ: Mapping[str, str] | None = None, cwd: str | os.PathLike[str] | None = None
) -> tuple[AnnouncerEntry, str]:
    """The configured entry point as ``(entry, where it came from)`` (see the module docstring).

    Raises:
        ConfigError: Malformed JSON or TOML, or an ``[entry]`` table without a valid ``use``.
    """
    env = os.environ if environ is None else environ
    base = Path.cwd() if cwd is None else Path(cwd)
    raw = env.get(ENTRY_ENV)
    if raw is not None and raw.strip():
        try:
            data = json.loads(raw)
        except json.JSONDecodeError as error:
            raise ConfigError(
                f"{ENTRY_ENV}: invalid JSON at line {error.lineno} column {error.colno}: "
                f'{error.msg}; expected an object such as {{"use": "sqlite"}}'
            ) from None
        return AnnouncerEntry.parse(data, ENTRY_ENV), ENTRY_ENV
    # The file the announcers are read from is the one the entry point is read from.
    if env.get(CONFIG_ENV):
        path = Path(env[CONFIG_ENV]).expanduser()
        path = path if path.is_absolute() else base / path
        if not path.is_file():
            raise ConfigError(f"{CONFIG_ENV}={env[CONFIG_ENV]!r}: no such file {str(path)!r}")
        candidates = [(path, path.name == PYPROJECT)]
    else:
        candidates = [(base / CONFIG_FILE, False), (base / PYPROJECT, True)]
    for path, pyproject in candidates:
        if not path.is_file():
            continue
        data = _read_toml(path)
        where = str(path)
        if pyproject:
            table = _tool_table(data)
            if not isinstance(table, dict):
                continue
            data = cast("dict[str, Any]", table)
            where = f"{where} [tool.{PYPROJECT_TABLE}]"
        if "entry" in data:
            return AnnouncerEntry.parse(data["entry"], f"{where}: entry"), where
        break
    from agent_wait.core._sqlite_file import default_inbox_path

    path = str(default_inbox_path(env))
    return AnnouncerEntry(use="sqlite", options={"path": path}), "default"


def default_entry() -> EntryPoint:
    """Build the configured entry point (a new instance on each call).

    Raises:
        ConfigError: The configuration is invalid; the message says where it came from.
    """
    configured, where = load_entry_config()
    try:
        return entry(configured.use, **configured.options)
    except ConfigError as error:
        raise type(error)(f"{where}: {error}") from error


def reply_entry(reply_to: Mapping[str, Any] | None) -> EntryPoint | None:
    """The entry point an envelope's ``reply_to`` names; None if it names none (no ``use``).

    Its options are the published ones plus the credentials (secret-named and ``*_env``
    options) of the configured entry point when that is of the same kind: the consumer's own.

    Raises:
        ConfigError: The ``reply_to`` carries a secret or ``*_env`` option, or names options
            the entry point does not accept.
        PluginNotFoundError: Its entry point is not installed here.
    """
    if not reply_to or "use" not in reply_to:
        return None
    described = check_reply_to(reply_to)
    use = described.pop("use")
    configured, _ = load_entry_config()
    options = dict(described)
    if configured.use == use:
        options.update({k: v for k, v in configured.options.items() if is_credential(k)})
    try:
        return entry(use, **options)
    except ConfigError as error:
        raise type(error)(f"the question's reply_to: {error}") from error
