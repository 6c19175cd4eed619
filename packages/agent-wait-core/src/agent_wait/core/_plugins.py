"""Plugin discovery (entry points, loaded lazily) and announcers by name."""

from __future__ import annotations

import difflib
import importlib
import logging
import os
import re
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from importlib.metadata import EntryPoint, entry_points
from typing import TYPE_CHECKING, Any, TypeVar, cast

from agent_wait.core import hookspecs
from agent_wait.core._announce import BaseAnnounce, delivers_events
from agent_wait.core._errors import ConfigError, PluginNotFoundError
from agent_wait.core._hooks import HookManager
from agent_wait.core._models import CLOSING_TYPES, LIFECYCLE_TYPES
from agent_wait.core._options import (
    ENV_SUFFIX,
    AnnouncerOptions,
    PluginOptions,
    redact,
    signature_options_model,
)

if TYPE_CHECKING:
    from agent_wait.core._ledger import ExecutionLedger
    from agent_wait.core._store import QuestionStore

logger = logging.getLogger(__name__)

DISABLE_AUTOLOAD_ENV = "AGENT_WAIT_DISABLE_PLUGIN_AUTOLOAD"
# Entry-point style names only: a config value must never become an import path.
_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_-]*$")


def conventional_distribution(name: str) -> str:
    """The distribution a plugin named ``name`` is published as, by convention.

    ``agent-wait-<name>``, underscores as hyphens (``pydantic_ai`` is ``agent-wait-pydantic-ai``):
    the hint an unknown name gets, so core lists no plugin.
    """
    return f"agent-wait-{name.replace('_', '-')}"


@dataclass(frozen=True)
class Registration:
    """A registered announcer kind or adapter.

    Attributes:
        name: The name configuration uses.
        target: ``"module:attr"`` import path or a callable.
        plugin: The plugin (entry-point name) that registered it.
        distribution: The distribution that ships the plugin, when known.
        version: Its version, when known.
    """

    name: str
    target: str | Callable[..., Any]
    plugin: str
    distribution: str | None = None
    version: str | None = None

    def resolve(self) -> Callable[..., Any]:
        """Import (if needed) and return the factory."""
        if callable(self.target):
            return self.target
        module_name, _, attr = self.target.partition(":")
        try:
            module = importlib.import_module(module_name)
        except ImportError as error:
            dist = self.distribution or conventional_distribution(self.plugin)
            raise ImportError(
                f"{self.name!r} needs a module that is not importable ({error}); "
                f"reinstall it: pip install {dist}"
            ) from error
        return cast("Callable[..., Any]", getattr(module, attr))


@dataclass(frozen=True)
class LoadedPlugin:
    """A plugin module registered with the plugin manager."""

    name: str
    distribution: str | None
    version: str | None


class PluginRegistry:
    """The pluggy manager plus what its plugins registered. Use :func:`registry`."""

    def __init__(self) -> None:
        self.manager = HookManager(hookspecs.PROJECT)
        self.manager.add_hookspecs(hookspecs)
        self.plugins: dict[str, LoadedPlugin] = {}
        self.announcers: dict[str, Registration] = {}
        self.adapters: dict[str, Registration] = {}
        self.entry_points: dict[str, Registration] = {}
        self.commands: dict[str, Registration] = {}
        self.identity_providers: dict[str, Registration] = {}
        self.inbox_routes: dict[str, Registration] = {}
        self.question_stores: dict[str, Registration] = {}
        self.execution_ledgers: dict[str, Registration] = {}
        self.failed: dict[str, str] = {}
        self._loaded = False
        self._lock = threading.RLock()

    def load(self, names: Iterable[str] | None = None) -> None:
        """Register the built-ins and the entry-point plugins (idempotent).

        Args:
            names: Load only these entry points (they must exist). Default: all of them, unless
                ``AGENT_WAIT_DISABLE_PLUGIN_AUTOLOAD=1``.
        """
        with self._lock:
            if "core" not in self.plugins:
                from agent_wait.core import _builtin_plugin

                self.register(_builtin_plugin, "core", "agent-wait-core", _core_version())
            wanted = None if names is None else set(names)
            if wanted is None and (self._loaded or os.environ.get(DISABLE_AUTOLOAD_ENV) == "1"):
                return
            available = {ep.name: ep for ep in entry_points(group=hookspecs.PROJECT)}
            for name in sorted(available if wanted is None else wanted):
                if name in self.plugins:
                    continue
                entry = available.get(name)
                if entry is None:
                    raise PluginNotFoundError(_not_installed("plugin", name, available))
                self._load_entry_point(entry, required=wanted is not None)
            if wanted is None:
                self._loaded = True
            self.manager.check_pending()

    def _load_entry_point(self, entry: EntryPoint, *, required: bool) -> None:
        dist = entry.dist
        try:
            module = entry.load()
        except ImportError as error:
            if required:
                raise ImportError(
                    f'error importing agent-wait plugin "{entry.name}": {error}'
                ) from error
            # An autoloaded plugin that cannot import must not break every other plugin.
            logger.exception("agent-wait plugin %r failed to import; skipped", entry.name)
            self.failed[entry.name] = f"{type(error).__name__}: {error}"
            return
        self.register(
            module, entry.name, dist.name if dist else None, dist.version if dist else None
        )

    def register(
        self, plugin: object, name: str, distribution: str | None = None, version: str | None = None
    ) -> None:
        """Register a plugin object (module or instance) under ``name`` and collect its kinds."""
        with self._lock:
            if name in self.plugins:
                raise ConfigError(f"plugin name {name!r} is already registered")
            self.manager.register(plugin, name=name)
            self.plugins[name] = LoadedPlugin(name, distribution, version)
            hooks = self.manager.subset_hook_caller
            others = [p for p in self.manager.get_plugins() if p is not plugin]
            caller = hooks("register_announcers", others)
            caller(
                register=self._collector(self.announcers, "announcer", name, distribution, version)
            )
            caller = hooks("register_adapters", others)
            caller(register=self._collector(self.adapters, "adapter", name, distribution, version))
            caller = hooks("register_entry_points", others)
            caller(
                register=self._collector(
                    self.entry_points, "entry point", name, distribution, version
                )
            )
            caller = hooks("register_commands", others)
            caller(register=self._collector(self.commands, "command", name, distribution, version))
            caller = hooks("register_question_stores", others)
            caller(
                register=self._collector(
                    self.question_stores, "question store", name, distribution, version
                )
            )
            caller = hooks("register_execution_ledgers", others)
            caller(
                register=self._collector(
                    self.execution_ledgers, "execution ledger", name, distribution, version
                )
            )
            caller = hooks("register_identity_providers", others)
            caller(
                register=self._collector(
                    self.identity_providers, "identity provider", name, distribution, version
                )
            )
            caller = hooks("register_inbox_routes", others)
            caller(
                register=self._collector(
                    self.inbox_routes, "inbox route set", name, distribution, version
                )
            )

    def unregister(self, name: str) -> None:
        """Remove a plugin and everything it registered (used by tests)."""
        with self._lock:
            self.manager.unregister(name=name)
            self.plugins.pop(name, None)
            for table in (
                self.announcers,
                self.adapters,
                self.entry_points,
                self.commands,
                self.identity_providers,
                self.inbox_routes,
                self.question_stores,
                self.execution_ledgers,
            ):
                for key in [k for k, r in table.items() if r.plugin == name]:
                    del table[key]

    @staticmethod
    def _collector(
        table: dict[str, Registration],
        kind: str,
        plugin: str,
        dist: str | None,
        version: str | None,
    ) -> Callable[[str, str | Callable[..., Any]], None]:
        def register(name: str, target: str | Callable[..., Any]) -> None:
            if not isinstance(name, str) or not name:  # pyright: ignore[reportUnnecessaryIsInstance]
                raise ConfigError(
                    f"plugin {plugin!r} registered an {kind} with invalid name {name!r}"
                )
            if not (callable(target) or (isinstance(target, str) and ":" in target)):  # pyright: ignore[reportUnnecessaryIsInstance]
                raise ConfigError(
                    f"plugin {plugin!r} registered {kind} {name!r} with target {target!r}; "
                    "expected 'module:attribute' or a callable"
                )
            existing = table.get(name)
            if existing is not None and existing.plugin != plugin:
                raise ConfigError(
                    f"{kind} name {name!r} is registered by both {existing.plugin!r} and {plugin!r}; "
                    "uninstall one of them"
                )
            table[name] = Registration(name, target, plugin, dist, version)

        return register


def _core_version() -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("agent-wait-core")
    except PackageNotFoundError:  # running from a source tree without metadata
        return None


_registry = PluginRegistry()


def registry() -> PluginRegistry:
    """The process-wide plugin registry, with plugins loaded on first use."""
    _registry.load()
    return _registry


def _not_installed(kind: str, name: str, installed: Iterable[str]) -> str:
    names = sorted(installed)
    parts = [f"unknown {kind} {name!r}", f"installed: {', '.join(names) or 'none'}"]
    dist = conventional_distribution(name)
    parts.append(f"a plugin providing {name!r} is named {dist} by convention (pip install {dist})")
    close = difflib.get_close_matches(name, names, n=1)
    if close:
        parts.append(f"did you mean {close[0]!r}?")
    return "; ".join(parts)


def question_store(name: str, /, **options: Any) -> QuestionStore:
    """Build the question store that reads what the announcer ``name`` writes.

    Args:
        name: The announcer's registered name (``postgres``, ``dynamodb``).
        options: The announcer's options, as configured (``*_env`` options name environment
            variables).

    Raises:
        PluginNotFoundError: No installed plugin registers a store of that name.
        ConfigError: The name is not a plain name, or an option is invalid (the message names
            the store, the option and its value, redacted).
    """
    if not isinstance(name, str) or not _NAME.match(name):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise ConfigError(
            f"question store name {name!r} is not a plain name like 'postgres'; configuration "
            "names installed stores (see `agent-wait plugins`), never a module path"
        )
    # Here, not at import: a publish never builds a store.
    from agent_wait.core._store import QuestionStore

    return _built("question store", registry().question_stores, name, options, QuestionStore)


_Built = TypeVar("_Built")


def _built(
    kind: str,
    table: Mapping[str, Registration],
    name: str,
    options: Mapping[str, Any],
    expected: type[_Built],
) -> _Built:
    """What the plugin registered as ``name`` in ``table`` builds from ``options``.

    Raises:
        PluginNotFoundError: Nothing is registered as ``name``.
        ConfigError: An option is invalid (the message names the ``kind``, redacted), or the
            factory built something other than an ``expected``.
    """
    registration = table.get(name)
    if registration is None:
        raise PluginNotFoundError(_not_installed(kind, name, table))
    try:
        built = registration.resolve()(**options)
    except ConfigError:
        raise
    except (TypeError, ValueError) as error:
        raise ConfigError(f"{kind} {name!r}: {redact(str(error))}") from error
    if not isinstance(built, expected):
        raise ConfigError(
            f"{kind} {name!r} factory returned {type(built).__name__}, expected {expected.__name__}"
        )
    return built


def identity_providers() -> dict[str, Any]:
    """Build every identity provider plugins register (``register_identity_providers``).

    Returns:
        Provider name to provider object, in name order.

    Raises:
        ConfigError: A provider's factory failed (the message names the provider and plugin).
        ImportError: The plugin providing it is installed but fails to import.
    """
    built: dict[str, Any] = {}
    for name, registration in sorted(registry().identity_providers.items()):
        try:
            built[name] = registration.resolve()()
        except (TypeError, ValueError) as error:
            raise ConfigError(
                f"identity provider {name!r} of plugin {registration.plugin!r}: {error}"
            ) from error
    return built


def inbox_routes() -> dict[str, Callable[..., Any]]:
    """The route sets plugins serve inside the inbox web app (``register_inbox_routes``).

    Returns:
        Mount name (the path prefix, ``slack``) to a function ``routes(store=..., entry=...)``
        returning the Starlette routes, in name order. Each imports its plugin's factory only
        when called, so one plugin that fails to import spoils no other's routes.
    """
    return {
        name: _deferred(registration)
        for name, registration in sorted(registry().inbox_routes.items())
    }


def _deferred(registration: Registration) -> Callable[..., Any]:
    def routes(**arguments: Any) -> Any:
        return registration.resolve()(**arguments)

    return routes


def announcer(name: str, /, **options: Any) -> BaseAnnounce:
    """Build an announcer by its registered name, validating its options against its model.

    An option whose name ends in ``_env`` (``secret_env="HOOK_SECRET"``) names an environment
    variable holding the value of the option without the suffix (``secret``), so configuration
    never has to contain a secret.

    Example:
        ``announcer("sqs", queue_url="https://sqs.../approvals.fifo")``

    Raises:
        PluginNotFoundError: No announcer of that name is installed (the message lists the
            installed ones, a close match, and the distribution to install).
        ConfigError: The name is not a plain name (configuration never imports a module path),
            or an option is unknown, missing or invalid (the message names the announcer, the
            option and its value, redacted).
        ImportError: The plugin providing the name is installed but fails to import (the
            message names it).
    """
    if not isinstance(name, str) or not _NAME.match(name):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise ConfigError(
            f"announcer name {name!r} is not a plain name like 'sqlite' or 'sqs'; configuration "
            "names installed announcers (see `agent-wait plugins`), never a module path"
        )
    reg = registry()
    registration = reg.announcers.get(name) or _load_on_demand(reg, name)
    if registration is None:
        message = _not_installed("announcer", name, reg.announcers)
        if os.environ.get(DISABLE_AUTOLOAD_ENV) == "1":
            message += (
                f" (plugin autoload is off: {DISABLE_AUTOLOAD_ENV}=1; only an announcer whose "
                "entry point has the same name is loaded on demand)"
            )
        raise PluginNotFoundError(message)
    factory = registration.resolve()
    events = lifecycle_option(name, options.pop(LIFECYCLE_OPTION, None))
    if events and isinstance(factory, type) and not delivers_events(factory):
        # Refused before building: a misplaced opt-in must not cost a connection first.
        raise _no_events(name, factory)
    built = build_plugin("announcer", name, factory, options_model(factory), options)
    if not isinstance(built, BaseAnnounce):
        raise ConfigError(
            f"announcer {name!r} factory returned {type(built).__name__}, not a BaseAnnounce"
        )
    if type(built).name == type(built).__name__ and built.name == type(built).__name__:
        built.name = name
    if events:
        if not delivers_events(type(built)):
            built.close()
            raise _no_events(name, type(built))
        built.with_lifecycle_events(*events)
    return built


LIFECYCLE_OPTION = "lifecycle_events"
"""The option of every ``[[announce]]`` entry that opts the announcer in to lifecycle events."""

LIFECYCLE_OPTION_SCHEMA: dict[str, Any] = {
    "anyOf": [
        {"type": "boolean"},
        {"items": {"enum": list(LIFECYCLE_TYPES)}, "type": "array", "uniqueItems": True},
    ],
    "default": False,
    "description": "Opt in to lifecycle events: true for what became of each question "
    "(``wait.answered``, ``wait.expired``, ``wait.answer_refused``), or a list of the types, "
    "which may also name the sweeper's follow-ups (``wait.reminder``, ``wait.escalated``, "
    "``wait.last_warning``). Off by default.",
    "title": "Lifecycle Events",
}
"""The JSON Schema of :data:`LIFECYCLE_OPTION`, in the options schema of an announcer that
publishes lifecycle events."""


def lifecycle_option(name: str, value: object) -> tuple[str, ...]:
    """The lifecycle event types a configured ``lifecycle_events`` value opts in to.

    ``true`` is what became of each question (:data:`CLOSING_TYPES`), ``false`` (or absent)
    none, a list names the types (the follow-ups only so: a store announcer has nothing to do
    with a reminder).

    Raises:
        ConfigError: Any other value; the message names the announcer, the option and the value.
    """
    if value is None or value is False:
        return ()
    if value is True:
        return CLOSING_TYPES
    listed: object = value
    if isinstance(listed, list | tuple):
        kinds = list(cast("Sequence[object]", listed))
        if all(kind in LIFECYCLE_TYPES for kind in kinds) and len(set(kinds)) == len(kinds):
            return tuple(str(kind) for kind in kinds)
    raise ConfigError(
        f"announcer {name!r}: option {LIFECYCLE_OPTION!r}: expected true, false or a list of "
        f"distinct event types out of {', '.join(repr(t) for t in LIFECYCLE_TYPES)} "
        f"(got {redact(value)!r})"
    )


def _no_events(name: str, announcer_type: type) -> ConfigError:
    return ConfigError(
        f"announcer {name!r}: option {LIFECYCLE_OPTION!r}: {announcer_type.__name__} does not "
        f"publish lifecycle events (of the installed announcers, {', '.join(event_announcers())} "
        "do)"
    )


def event_announcers() -> list[str]:
    """The installed announcers that publish lifecycle events, by name.

    Each announcer class says so itself, by implementing :meth:`BaseAnnounce.deliver_event`
    (see :func:`~agent_wait.core._announce.delivers_events`). One whose plugin cannot import
    its transport library is left out.
    """
    names: list[str] = []
    for name, registration in sorted(registry().announcers.items()):
        try:
            factory = registration.resolve()
        except ImportError:
            continue
        if not (isinstance(factory, type) and issubclass(factory, BaseAnnounce)):
            continue  # a factory function: its class is known only once built
        if delivers_events(factory):
            names.append(name)
    return names


def options_model(
    factory: object, base: type[PluginOptions] = AnnouncerOptions
) -> type[PluginOptions] | None:
    """The options model of a plugin class (or factory callable).

    The one it declares (``options_model``), else one derived from its constructor's signature
    (:func:`~agent_wait.core._options.signature_options_model`), so a plugin written before
    options models existed is checked and described the same way.

    Args:
        factory: The registered class or callable.
        base: The options base of its kind (:class:`EntryOptions` for entry points).

    Returns:
        The model; None when the plugin declares none and its constructor takes ``**kwargs``.
    """
    model = getattr(factory, "options_model", None)
    if isinstance(model, type) and issubclass(model, base):
        return model
    if callable(factory):
        return signature_options_model(cast("Callable[..., Any]", factory), base)
    return None


def build_plugin(
    kind: str,
    name: str,
    factory: Callable[..., Any],
    model: type[PluginOptions] | None,
    options: Mapping[str, Any],
) -> object:
    """Check ``options`` against the plugin's options model, then call its factory with them.

    Raises:
        ConfigError: An option is unknown, missing or invalid, or the factory refused it with a
            TypeError or ValueError; the message names the plugin (values redacted).
    """
    if model is None:
        # A factory taking **kwargs: it checks its options itself.
        kwargs = _resolve_env_options(name, options)
    else:
        kwargs = model.resolve(name, options)
        # Validated here too, so a missing or misspelt option is reported as an option error
        # rather than as the TypeError of the call.
        model.parse(name, kwargs)
    try:
        return factory(**kwargs)
    except ConfigError:
        raise
    except (TypeError, ValueError) as error:
        raise ConfigError(f"announcer {name!r}: {redact(str(error))}") from error


def _load_on_demand(reg: PluginRegistry, name: str) -> Registration | None:
    # Autoload off, or the plugin failed to import when autoloaded: load the entry point of the
    # same name explicitly, so an import error is raised here, naming it (as pytest's -p does).
    if name in reg.plugins or name not in {ep.name for ep in entry_points(group=hookspecs.PROJECT)}:
        return None
    reg.load([name])
    return reg.announcers.get(name)


def _resolve_env_options(name: str, options: Mapping[str, Any]) -> dict[str, Any]:
    resolved = dict(options)
    for key, variable in options.items():
        if not key.endswith(ENV_SUFFIX) or key == ENV_SUFFIX:
            continue
        target = key.removesuffix(ENV_SUFFIX)
        if target in options:
            raise ConfigError(f"announcer {name!r}: give {target!r} or {key!r}, not both")
        if not isinstance(variable, str) or not variable:
            raise ConfigError(
                f"announcer {name!r}: option {key!r} must name an environment variable, got {variable!r}"
            )
        value = os.environ.get(variable)
        if value is None:
            raise ConfigError(
                f"announcer {name!r}: option {key!r} names environment variable {variable!r}, "
                "which is not set"
            )
        del resolved[key]
        resolved[target] = value
    return resolved


def announcers_from_config(entries: Sequence[Mapping[str, Any]]) -> list[BaseAnnounce]:
    """Build announcers from config entries: ``[{"use": "sqs", "queue_url": ...}, ...]``.

    Each entry names its kind under ``use``; the other keys are the announcer's options.

    Raises:
        ConfigError: An entry is malformed; the message names its position.
    """
    if isinstance(entries, Mapping) or not isinstance(entries, Sequence):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise ConfigError(
            f"announce: expected a list of announcer entries, got {type(entries).__name__}"
        )
    built: list[BaseAnnounce] = []
    for index, entry in enumerate(entries):
        if not isinstance(entry, Mapping):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ConfigError(f"announce[{index}]: expected a table/object, got {entry!r}")
        options = dict(entry)
        kind = options.pop("use", None)
        if not isinstance(kind, str) or not kind:
            raise ConfigError(
                f"announce[{index}]: 'use' must name an announcer (e.g. \"sqlite\"), got {kind!r}"
            )
        try:
            built.append(announcer(kind, **options))
        except ConfigError as error:
            raise type(error)(f"announce[{index}]: {error}") from error
    return built


def execution_ledger(name: str, /, **options: Any) -> ExecutionLedger:
    """Build the execution ledger that shares the storage of the announcer ``name``.

    Args:
        name: The announcer's registered name (``sqlite``, ``postgres``).
        options: The announcer's options, as configured.

    Raises:
        PluginNotFoundError: No installed plugin registers a ledger of that name.
        ConfigError: An option is invalid (the message names the ledger, redacted).
    """
    # Here, not at import: a publish never builds a ledger (and the ledger module uses this one).
    from agent_wait.core._ledger import ExecutionLedger

    return _built("execution ledger", registry().execution_ledgers, name, options, ExecutionLedger)
