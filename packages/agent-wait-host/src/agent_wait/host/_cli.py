"""The ``agent-wait`` command: plugins, schema, validate, config check, inbox, answer, sweep..."""

from __future__ import annotations

import argparse
import json
import logging
import re
import reprlib
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TextIO, cast

from pydantic import BaseModel, ValidationError
from pydantic_core import from_json

from agent_wait.core._errors import AgentWaitError
from agent_wait.core._models import (
    LIFECYCLE_TYPES,
    Answer,
    LifecycleEvent,
    StartMessage,
    WaitEnvelope,
    message_warnings,
)

JSON_SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"
SCHEMA_MODELS: dict[str, type[BaseModel]] = {
    "envelope": WaitEnvelope,
    "answer": Answer,
    "start": StartMessage,
    "lifecycle": LifecycleEvent,
}
DEFAULT_MAX_BYTES = 16 * 1024 * 1024
_MAX_ERRORS = 20
_short = reprlib.Repr()
_short.maxstring = 60
_short.maxother = 60
_short.maxlevel = 2
_short.maxdict = 4
_short.maxlist = 4


def json_schema(kind: str) -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of ``envelope``, ``answer``, ``start`` or ``lifecycle``.

    The envelope is outbound, so its schema describes the serialised form: every contract
    field is always present (nulls included), an optional field only when it has a value, and
    timestamps are exactly ``YYYY-MM-DDTHH:MM:SSZ``. The inbound messages are described as the
    models accept them.
    """
    model = SCHEMA_MODELS[kind]
    if kind in ("envelope", "lifecycle"):
        schema = model.model_json_schema(mode="serialization")
        fields = model.model_fields
        schema["required"] = [n for n in schema["properties"] if fields[n].exclude_if is None]
    else:
        schema = model.model_json_schema()
    return {"$schema": JSON_SCHEMA_DIALECT, **schema}


def schema_text(kind: str) -> str:
    """:func:`json_schema` as the text committed under docs/schema/."""
    return json.dumps(json_schema(kind), indent=2, ensure_ascii=False) + "\n"


class _BriefFormatter(logging.Formatter):
    """One line per log record: the exception's type and message, not its traceback."""

    def formatException(self, ei: Any) -> str:
        error = ei[1]
        return f"  ({type(error).__name__}: {error}; run with -v for the traceback)"

    def formatStack(self, stack_info: str) -> str:
        return ""


def _print(text: str = "", *, file: TextIO | None = None) -> None:
    print(text, file=file or sys.stdout)


def _error(text: str) -> None:
    print(f"agent-wait: {text}", file=sys.stderr)


# --- plugins -----------------------------------------------------------------------------------


def _plugins_data() -> dict[str, Any]:
    from agent_wait.core._plugins import registry

    reg = registry()
    plugins: list[dict[str, Any]] = []
    for name, loaded in sorted(reg.plugins.items()):
        plugin = reg.manager.get_plugin(name)
        callers = (reg.manager.get_hookcallers(plugin) or []) if plugin is not None else []
        plugins.append(
            {
                "name": name,
                "distribution": loaded.distribution,
                "version": loaded.version,
                "hooks": sorted(caller.name for caller in callers),
            }
        )

    def kinds(table: Mapping[str, Any]) -> list[dict[str, Any]]:
        return [
            {
                "name": r.name,
                "plugin": r.plugin,
                "distribution": r.distribution,
                "version": r.version,
                "target": r.target if isinstance(r.target, str) else repr(r.target),
            }
            for r in sorted(table.values(), key=lambda r: r.name)
        ]

    announcers = kinds(reg.announcers)
    for item in announcers:
        item["options_schema"] = _options_schema(reg.announcers[item["name"]], "announcer")
    entry_points = kinds(reg.entry_points)
    for item in entry_points:
        item["options_schema"] = _options_schema(reg.entry_points[item["name"]], "entry point")
    return {
        "plugins": plugins,
        "announcers": announcers,
        "adapters": kinds(reg.adapters),
        "entry_points": entry_points,
        "failed": [{"name": n, "error": e} for n, e in sorted(reg.failed.items())],
    }


def _options_model(registration: Any, kind: str) -> Any:
    """The options model of an announcer or entry point registration; None when it has none."""
    from agent_wait.core._options import AnnouncerOptions, EntryOptions
    from agent_wait.core._plugins import options_model

    base = EntryOptions if kind == "entry point" else AnnouncerOptions
    return options_model(registration.resolve(), base)


def _options_schema(registration: Any, kind: str) -> dict[str, Any] | None:
    """The JSON Schema of an announcer's or entry point's options; None when it declares none."""
    from agent_wait.core._announce import delivers_events
    from agent_wait.core._plugins import LIFECYCLE_OPTION, LIFECYCLE_OPTION_SCHEMA

    try:
        model = _options_model(registration, kind)
    except ImportError as error:
        # Listed anyway: the plugin is installed, only its transport library is missing.
        return {"error": str(error)}
    if model is None:
        return None
    schema: dict[str, Any] = {"$schema": JSON_SCHEMA_DIALECT, **model.json_schema()}
    factory = registration.resolve()
    if kind == "announcer" and isinstance(factory, type) and delivers_events(factory):
        # Core takes this option for every announcer entry; only these accept it.
        schema["properties"] = {**schema["properties"], LIFECYCLE_OPTION: LIFECYCLE_OPTION_SCHEMA}
    return schema


def _cmd_plugins(args: argparse.Namespace) -> int:
    data = _plugins_data()
    if args.json:
        _print(json.dumps(data, indent=2))
        return 0

    def where(item: Mapping[str, Any]) -> str:
        dist = item["distribution"] or "?"
        return f"{dist} {item['version']}" if item["version"] else dist

    _print("Plugins (entry-point group agent_wait):")
    for plugin in data["plugins"]:
        _print(
            f"  {plugin['name']:<16} {where(plugin):<40} hooks: {', '.join(plugin['hooks']) or '-'}"
        )
    kinds = (
        ("Announcers", "announcers"),
        ("Adapters", "adapters"),
        ("Entry points", "entry_points"),
    )
    for title, key in kinds:
        _print(f"{title}:")
        for item in data[key]:
            _print(f"  {item['name']:<16} {where(item):<40} plugin: {item['plugin']}")
        if not data[key]:
            _print("  (none)")
    if data["failed"]:
        _print("Failed to load:")
        for item in data["failed"]:
            _print(f"  {item['name']:<16} {item['error']}")
    return 0


# --- schema ------------------------------------------------------------------------------------


def options_schema_text(name: str, kind: str = "announcer") -> str:
    """The JSON Schema of an announcer's or entry point's options, as committed in docs.

    Announcers' are under docs/schema/options/, entry points' under docs/schema/entry/.

    Args:
        name: The registered name.
        kind: ``"announcer"`` or ``"entry point"``.

    Raises:
        PluginNotFoundError: No plugin of that kind and name is installed.
        ConfigError: It declares no options model.
    """
    from agent_wait.core._errors import ConfigError, PluginNotFoundError
    from agent_wait.core._plugins import registry

    reg = registry()
    table = reg.entry_points if kind == "entry point" else reg.announcers
    registration = table.get(name)
    if registration is None:
        raise PluginNotFoundError(f"unknown {kind} {name!r}; see `agent-wait plugins`")
    schema = _options_schema(registration, kind)
    if schema is None:
        raise ConfigError(f"{kind} {name!r} declares no options model")
    return json.dumps(schema, indent=2, ensure_ascii=False) + "\n"


def _cmd_schema(args: argparse.Namespace) -> int:
    if args.announcer is None and args.entry is None:
        sys.stdout.write(schema_text(args.kind))
        return 0
    try:
        if args.announcer is not None:
            sys.stdout.write(options_schema_text(args.announcer))
        else:
            sys.stdout.write(options_schema_text(args.entry, "entry point"))
    except AgentWaitError as error:
        _error(str(error))
        return 1
    return 0


# --- validate ----------------------------------------------------------------------------------


def _read_input(source: str, limit: int) -> bytes:
    if source == "-":
        return sys.stdin.buffer.read(limit + 1)
    with open(source, "rb") as handle:
        return handle.read(limit + 1)


def _location(loc: Sequence[int | str]) -> str:
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "(message)"


def _detect(message: Mapping[str, Any]) -> str:
    if message.get("type") in LIFECYCLE_TYPES:
        return "lifecycle"
    if message.get("type") == "wait.created" or "event_id" in message:
        return "envelope"
    if "question_id" in message:
        return "answer"
    return "start"


def _cmd_validate(args: argparse.Namespace) -> int:
    source: str = args.file
    label = "<stdin>" if source == "-" else source
    limit: int = args.max_bytes
    try:
        data = _read_input(source, limit)
    except OSError as error:
        _error(f"cannot read {label}: {error.strerror or error}")
        return 1
    if len(data) > limit:
        _error(f"{label}: larger than {limit} bytes; refused (see --max-bytes)")
        return 1
    try:
        message = from_json(data, allow_inf_nan=False)
    except ValueError as error:
        _error(f"{label}: not valid JSON: {error}")
        return 1
    if not isinstance(message, dict):
        _error(
            f"{label}: expected a JSON object, got {type(message).__name__} {_short.repr(message)}"
        )
        return 1
    fields: dict[str, Any] = message  # pyright: ignore[reportUnknownVariableType]
    kind: str = args.kind if args.kind != "auto" else _detect(fields)
    model = SCHEMA_MODELS[kind]
    try:
        validated = model.model_validate(fields)
    except ValidationError as error:
        errors = error.errors(include_url=False)
        _error(f"{label}: invalid {kind}: {len(errors)} error{'s' if len(errors) != 1 else ''}")
        for item in errors[:_MAX_ERRORS]:
            got = "" if item["type"] == "missing" else f" (got {_short.repr(item['input'])})"
            print(f"  {_location(item['loc'])}: {item['msg']}{got}", file=sys.stderr)
        if len(errors) > _MAX_ERRORS:
            print(f"  ... and {len(errors) - _MAX_ERRORS} more", file=sys.stderr)
        return 1
    if isinstance(validated, WaitEnvelope):
        from agent_wait.core._publish import ENVELOPE_LIMIT

        size = len(validated.to_json())
        if size > ENVELOPE_LIMIT:
            _error(
                f"{label}: invalid envelope: {size} bytes, over the {ENVELOPE_LIMIT}-byte limit of "
                "the smallest transport (SNS)"
            )
            return 1
        _print(f"{label}: valid envelope ({validated.dedupe_key}, thread {validated.thread_id})")
    elif isinstance(validated, Answer):
        _print(
            f"{label}: valid answer (question {validated.question_id}, thread {validated.thread_id})"
        )
    elif isinstance(validated, LifecycleEvent):
        _print(f"{label}: valid lifecycle event ({validated.dedupe_key})")
    else:
        warnings = message_warnings(fields)
        for warning in warnings:
            _error(f"{label}: warning: {warning}")
        if warnings and args.strict:
            _error(f"{label}: refused under --strict: {len(warnings)} warning(s)")
            return 1
        _print(f"{label}: valid start message (thread {fields.get('thread_id')})")
    return 0


# --- config check ------------------------------------------------------------------------------


def _cmd_config_check(args: argparse.Namespace) -> int:
    from agent_wait.core._config import load_config, scrub
    from agent_wait.core._plugins import announcer

    try:
        config = load_config()
    except AgentWaitError as error:
        _error(f"configuration error: {error}")
        return 1
    _print(f"configuration: {config.describe()} (source: {config.source})")
    failed = 0
    for index, entry in enumerate(config.announce):
        shown = json.dumps(_shown_entry(entry.use, entry.options), ensure_ascii=False, default=str)
        _print(f"  announce[{index}] {shown}")
        try:
            built = announcer(entry.use, **entry.options)
        except Exception as error:  # noqa: BLE001 - reporting each entry's failure is this command's job
            failed += 1
            _print(f"    error: {type(error).__name__}: {scrub(str(error), entry.options)}")
            continue
        what = f"{type(built).__module__}.{type(built).__qualname__} named {built.name!r}"
        try:
            if not args.connect:
                _print(f"    ok: {what}")
            elif built.check_connection():
                _print(f"    ok: {what}; connected")
            else:
                _print(f"    ok: {what}; it has no connectivity check")
        except Exception as error:  # noqa: BLE001 - an unreachable destination is this entry's failure
            failed += 1
            _print(f"    built: {what}")
            _print(
                f"    error: cannot connect: {type(error).__name__}: {scrub(str(error), entry.options)}"
            )
        finally:
            built.close()
    entry_failed = _check_entry_config()
    if failed:
        verb = "failed to build or connect" if args.connect else "failed to build"
        _error(f"{failed} of {len(config.announce)} announcers {verb}")
    if entry_failed:
        _error("the entry point failed to build")
    return 1 if failed or entry_failed else 0


def _check_entry_config() -> bool:
    """Show the configured entry point and build it (checking its options); True if it failed."""
    from agent_wait.core._config import scrub
    from agent_wait.core._entries import entry, load_entry_config

    try:
        configured, where = load_entry_config()
    except AgentWaitError as error:
        _print(f"  entry: configuration error: {error}")
        return True
    shown = json.dumps(
        _shown_entry(configured.use, configured.options, "entry point"),
        ensure_ascii=False,
        default=str,
    )
    _print(f"  entry {shown} (source: {where})")
    try:
        built = entry(configured.use, **configured.options)
    except Exception as error:  # noqa: BLE001 - reporting the entry point's failure is this command's job
        _print(f"    error: {type(error).__name__}: {scrub(str(error), configured.options)}")
        return True
    try:
        _print(f"    ok: {type(built).__module__}.{type(built).__qualname__} named {built.name!r}")
    finally:
        built.close()
    return False


def _shown_entry(use: str, options: Mapping[str, Any], kind: str = "announcer") -> dict[str, Any]:
    # The plugin's options model knows which options are secrets; without one (or when the
    # name is unknown) values are redacted by their names and shapes.
    from agent_wait.core._options import redact
    from agent_wait.core._plugins import registry

    reg = registry()
    registration = (reg.entry_points if kind == "entry point" else reg.announcers).get(use)
    try:
        model = _options_model(registration, kind) if registration is not None else None
    except ImportError:
        model = None
    if model is None:
        return {"use": use, **cast("dict[str, Any]", redact(dict(options)))}
    return {"use": use, **model.shown_options(options)}


# --- inbox -------------------------------------------------------------------------------------


def _cmd_inbox(args: argparse.Namespace) -> int:
    from agent_wait.core import (
        SqliteQuestionStore,
        call_summary,
        describe_deadline,
    )
    from agent_wait.core._quorum import describe_votes
    from agent_wait.core._sqlite_file import default_inbox_path
    from agent_wait.core._store import parse_now
    from agent_wait.host._asker import describe_asker

    path = Path(args.path).expanduser() if args.path else default_inbox_path()
    if not path.exists():
        # Nothing was published there yet: an empty inbox, not an error.
        _print("[]" if args.json else f"no questions yet (no inbox at {path}; see --path)")
        return 0
    if not path.is_file():
        _error(f"{path}: not a file (see --path)")
        return 1
    try:
        now = parse_now(args.now)
        with SqliteQuestionStore(path, table=args.table) as inbox:
            items = inbox.open_questions_past(now) if args.overdue else inbox.open_questions()
    except ValueError as error:
        _error(str(error))
        return 1
    except Exception as error:  # noqa: BLE001 - a foreign or damaged database is reported, not traced
        _error(f"cannot read the inbox at {path}: {type(error).__name__}: {error}")
        return 1
    if args.json:
        _print(
            json.dumps(
                [
                    {"status": i.status, "envelope": i.envelope.to_dict()}
                    | ({"refusal": i.refusal} if i.refusal else {})
                    | ({"votes": list(i.votes)} if i.envelope.quorum else {})
                    for i in items
                ],
                indent=2,
            )
        )
        return 0
    if not items:
        _print("no overdue open questions" if args.overdue else "no open questions")
        return 0
    # The first three columns hold no spaces (scripts split them); the call comes last, whole.
    rows = [("QUESTION_ID", "THREAD_ID", "ACTIONS", "DEADLINE", "CALL")]
    for item in items:
        envelope = item.envelope
        rows.append(
            (
                envelope.question_id,
                envelope.thread_id,
                ",".join(envelope.allowed_actions) or "-",
                describe_deadline(envelope.expires_at, now).text,
                call_summary(envelope),
            )
        )
    widths = [max(len(row[column]) for row in rows) for column in range(4)]
    by_id = {item.envelope.question_id: item for item in items}
    for row in rows:
        padded = [cell.ljust(width) for cell, width in zip(row[:4], widths, strict=True)]
        _print("  ".join([*padded, row[4]]))
        item = by_id.get(row[0])
        if item is None:
            continue
        envelope = item.envelope
        if asker := describe_asker(envelope):
            _print(f"  asked by {asker}")
        if votes := describe_votes(envelope.quorum, item.votes, envelope.tags):
            _print(f"  {votes}")
        if item.refusal:
            _print(f"  the agent refused this answer: {item.refusal.get('reason')}")
    return 0


# --- parser ------------------------------------------------------------------------------------


def _positive(text: str) -> int:
    value = int(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive number of bytes, got {text}")
    return value


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``agent-wait``."""
    parser = argparse.ArgumentParser(
        prog="agent-wait",
        description="Inspect agent-wait: installed plugins, the message schema, configuration and "
        "the embedded inbox; validate messages.",
        epilog="Run 'agent-wait COMMAND --help' for a command's options.",
    )
    parser.add_argument(
        "--version", action="store_true", help="print the agent-wait-core version and exit"
    )
    parser.add_argument(
        "-v", "--verbose", action="store_true", help="show tracebacks of logged errors"
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    plugins = commands.add_parser(
        "plugins",
        help="list installed plugins, announcers and adapters",
        description="List the plugins of the agent_wait entry-point group with their distribution, "
        "version and hooks, the announcer and adapter names they register, and plugins that "
        "failed to import.",
    )
    plugins.add_argument("--json", action="store_true", help="print JSON instead of text")
    plugins.set_defaults(handler=_cmd_plugins)

    schema = commands.add_parser(
        "schema",
        help="print the JSON Schema of a message or of a plugin's options",
        description="Print the JSON Schema (draft 2020-12) of the envelope agent-wait publishes, "
        "the recommended answer, the start message, or the opt-in lifecycle event, generated "
        "from the models; with --announcer or --entry, the schema of that announcer's or entry "
        "point's options.",
    )
    schema.add_argument(
        "kind",
        nargs="?",
        default="envelope",
        choices=sorted(SCHEMA_MODELS),
        help="default: envelope",
    )
    which = schema.add_mutually_exclusive_group()
    which.add_argument(
        "--announcer",
        metavar="NAME",
        help="print the options schema of this installed announcer instead",
    )
    which.add_argument(
        "--entry",
        metavar="NAME",
        help="print the options schema of this installed entry point instead",
    )
    schema.set_defaults(handler=_cmd_schema)

    validate = commands.add_parser(
        "validate",
        help="validate an envelope, answer, start message or lifecycle event",
        description="Validate one JSON message from FILE (or '-' for stdin). Exit 0 when valid, "
        "1 with field-level errors otherwise. The kind is detected: an envelope has "
        "type 'wait.created', a lifecycle event 'wait.answered' or 'wait.expired', an answer "
        "has question_id, anything else is a start message. "
        "A start message that carries 'answer' or a key close to 'question_id' (a mistyped "
        "answer) is valid but warned about on stderr; --strict makes that an error.",
    )
    validate.add_argument("file", metavar="FILE", help="a JSON file, or - for stdin")
    validate.add_argument(
        "--kind",
        choices=["auto", *sorted(SCHEMA_MODELS)],
        default="auto",
        help="message kind (default: auto)",
    )
    validate.add_argument(
        "--max-bytes",
        type=_positive,
        default=DEFAULT_MAX_BYTES,
        help=f"refuse larger input (default: {DEFAULT_MAX_BYTES})",
    )
    validate.add_argument(
        "--strict",
        action="store_true",
        help="exit 1 on warnings too (a start message that looks like a mistyped answer)",
    )
    validate.set_defaults(handler=_cmd_validate)

    config = commands.add_parser(
        "config",
        help="inspect the announcer configuration",
        description="Inspect the announcer configuration.",
    )
    config_commands = config.add_subparsers(
        dest="config_command", metavar="SUBCOMMAND", required=True
    )
    check = config_commands.add_parser(
        "check",
        help="show where the configuration comes from and build every announcer and the entry point",
        description="Show where the configuration comes from (AGENT_WAIT_ANNOUNCE, "
        "AGENT_WAIT_CONFIG, ./agent-wait.toml, ./pyproject.toml [tool.agent-wait], or the "
        "embedded default) and build every announcer, then the entry point ([entry], "
        "AGENT_WAIT_ENTRY, or the embedded sqlite one), with secrets redacted. Exit 1 on any "
        "error.",
    )
    check.add_argument(
        "--connect",
        action="store_true",
        help="also check that each destination is reachable (one cheap round trip that writes "
        "nothing: a PING, a metadata read); announcers without such a check say so",
    )
    check.set_defaults(handler=_cmd_config_check)

    inbox = commands.add_parser(
        "inbox",
        help="list open questions in the embedded sqlite inbox",
        description="List the open questions the sqlite announcer stored, earliest deadline first.",
    )
    inbox.add_argument(
        "--path", help="the database file (default: the sqlite announcer's default path)"
    )
    inbox.add_argument(
        "--table", default="agent_wait_inbox", help="the table name (default: agent_wait_inbox)"
    )
    inbox.add_argument(
        "--json", action="store_true", help="print JSON: a list of {status, envelope}"
    )
    inbox.add_argument(
        "--overdue", action="store_true", help="only open questions whose expires_at has passed"
    )
    inbox.add_argument(
        "--now",
        help="the time deadlines are measured from, and with --overdue compared with "
        "(RFC 3339; default: now)",
    )
    inbox.set_defaults(handler=_cmd_inbox)

    from agent_wait.host._cli_answer import add_commands

    add_commands(commands)
    _add_plugin_commands(commands)
    return parser


_COMMAND_WORD = re.compile(r"^[a-z][a-z0-9-]*$")


def _add_plugin_commands(commands: Any) -> None:
    """Add the commands plugins register (``register_commands``); a broken one is left out."""
    from agent_wait.core._plugins import registry

    log = logging.getLogger("agent_wait.core.cli")
    groups: dict[str, Any] = {"": commands}
    parsers: dict[str, argparse.ArgumentParser] = dict(commands.choices)
    # Parents before children: "inbox" is known before "inbox serve" is added under it.
    for name, registration in sorted(
        registry().commands.items(), key=lambda item: (len(item[0].split()), item[0])
    ):
        *parent_words, word = name.split() or [""]
        parent = " ".join(parent_words)
        where = f"command {name!r} of plugin {registration.plugin!r}"
        if not all(_COMMAND_WORD.match(w) for w in [*parent_words, word]):
            log.error("%s: expected lower-case words such as 'inbox serve'; left out", where)
            continue
        group = groups.get(parent)
        if group is None:
            parent_parser = parsers.get(parent)
            if parent_parser is None:
                log.error("%s: there is no command %r to add it to; left out", where, parent)
                continue
            group = parent_parser.add_subparsers(
                dest=f"{parent.replace(' ', '_')}_command", metavar="SUBCOMMAND"
            )
            groups[parent] = group
        if word in group.choices:
            log.error("%s: the name is taken by another command; left out", where)
            continue
        try:
            setup = registration.resolve()
            summary = (setup.__doc__ or "").strip().partition("\n")[0]
            parser = argparse.ArgumentParser(prog=f"agent-wait {name}", description=summary or None)
            setup(parser)
        except Exception as error:  # noqa: BLE001 - one broken plugin must not break the CLI
            log.error(
                "%s could not be set up (%s: %s); left out", where, type(error).__name__, error
            )
            continue
        group.add_parser(
            word,
            help=summary or None,
            parents=[parser],
            add_help=False,
            description=parser.description,
        )
        parsers[name] = group.choices[word]


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``agent-wait`` with ``argv`` (default: the process arguments); return the exit code."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:  # --help and usage errors: argparse already printed
        return exit_.code if isinstance(exit_.code, int) else 2
    if args.version:
        from agent_wait.core import __version__

        _print(f"agent-wait-core {__version__}")
        return 0
    handler: Callable[[argparse.Namespace], int] | None = getattr(args, "handler", None)
    if handler is None:
        # Like pip and docker: asking for nothing in particular is asking for help.
        parser.print_help()
        return 0
    handler_log = logging.StreamHandler(sys.stderr)
    if not args.verbose:
        handler_log.setFormatter(_BriefFormatter("agent-wait: %(levelname)s: %(message)s"))
    root = logging.getLogger("agent_wait")
    root.addHandler(handler_log)
    try:
        return handler(args)
    finally:
        root.removeHandler(handler_log)


if __name__ == "__main__":  # pragma: no cover - python -m agent_wait.host._cli
    sys.exit(main())
