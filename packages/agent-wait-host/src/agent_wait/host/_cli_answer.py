"""The ``agent-wait answer``, ``show``, ``cancel``, ``resend``, ``sweep`` and ``dead-letters`` commands."""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import shlex
import signal
import sqlite3
import sys
import threading
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from pydantic import ValidationError

from agent_wait.core._answer_schema import example_answer
from agent_wait.core._errors import AgentWaitError

if TYPE_CHECKING:
    from collections.abc import Mapping

    from agent_wait.core._audit import AuditLog
    from agent_wait.core._identity import Identity
    from agent_wait.core._models import WaitEnvelope
    from agent_wait.core._sqlite_store import SqliteQuestionStore
    from agent_wait.core._store import QuestionStore, StoredQuestion


def _error(text: str) -> None:
    print(f"agent-wait: {text}", file=sys.stderr)


def _store(args: argparse.Namespace, *, must_exist: bool = True) -> SqliteQuestionStore:
    from agent_wait.core._sqlite_store import SqliteQuestionStore
    from agent_wait.host._answering import default_store

    store = (
        SqliteQuestionStore(Path(args.path).expanduser(), table=args.table)
        if args.path
        else default_store()
    )
    if must_exist and not store.path.is_file():
        store.close()
        raise AgentWaitError(f"no inbox at {store.path} (nothing published there yet; see --path)")
    return store


ID_PREFIX = 8
"""The fewest hex characters of a question id a command takes in its place."""
ID_HELP = (
    f"the question's id, or its first {ID_PREFIX} or more characters when no other id starts "
    "with them"
)
_HEX_PREFIX = re.compile(rf"[0-9a-f]{{{ID_PREFIX},}}")


def _full_id(store: SqliteQuestionStore, typed: str, thread: str | None) -> str:
    """The question id ``typed`` names: itself, or the one id it starts (8+ hex characters).

    Raises:
        AgentWaitError: The prefix starts several question ids (named, so one can be chosen).
    """
    if not _HEX_PREFIX.fullmatch(typed) or store.find(typed, thread):
        return typed
    query = f'SELECT DISTINCT question_id FROM "{store.table}" WHERE question_id GLOB ?'
    params: list[str] = [typed + "*"]
    if thread is not None:
        query += " AND pk = ?"
        params.append(f"THREAD#{thread}")
    connection = sqlite3.connect(f"{store.path.resolve().as_uri()}?mode=ro", uri=True)
    try:
        found = sorted(row[0] for row in connection.execute(query + " LIMIT 11", params))
    except sqlite3.OperationalError:  # no table yet: nothing to match
        found = []
    finally:
        connection.close()
    if len(found) > 1:
        shown = ", ".join(found[:10]) + (", ..." if len(found) > 10 else "")
        raise AgentWaitError(
            f"QUESTION_ID: {typed} starts several question ids ({shown}); give more characters"
        )
    return found[0] if found else typed


def _full_ids(args: argparse.Namespace, store: SqliteQuestionStore) -> None:
    """Put the whole question ids in ``args`` where unique prefixes were typed."""
    if args.question_id is not None:
        args.question_id = _full_id(store, args.question_id, args.thread)
    also = cast("list[tuple[str, str]] | None", getattr(args, "also", None))
    if also:
        args.also = [(_full_id(store, q, args.thread), text) for q, text in also]


def _json_option(name: str, text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise ValueError(f"{name}: not valid JSON ({error.msg} at column {error.colno})") from None


def _answers(args: argparse.Namespace, store: SqliteQuestionStore) -> dict[str, Any]:
    """Question id to whole answer, from QUESTION_ID with ACTION/--decision/--json, and --also."""
    from agent_wait.host._answering import (
        _lookup,  # pyright: ignore[reportPrivateUsage]
        check_answerer,
    )

    if args.by is not None:
        check_answerer(args.by, "--by")
    given = [
        name
        for name, value in (("ACTION", args.action), ("--decision", args.decision))
        if value is not None
    ]
    if args.json is not None:
        if given or args.answer is not None:
            raise ValueError("--json is the whole answer: give it without ACTION and --answer")
        first = _json_option("--json", args.json)
    elif not given:
        raise ValueError(
            "ACTION: give an action (such as approve), or the whole answer with --json"
        )
    elif len(given) > 1:
        raise ValueError("--decision answers a batch of actions: give it without ACTION")
    else:
        question = _lookup(store, args.question_id, args.thread)
        if args.decision is not None:
            try:
                first = _batch_answer(question, cast("list[str]", args.decision))
            except ValueError as error:
                raise ValueError(
                    f"{error}; for example: {answer_form(question.envelope)}"
                ) from None
        else:
            first = _action_answer(question, args.action, args.answer, args.force)
    answers: dict[str, Any] = {args.question_id: first}
    also = cast("list[tuple[str, str]]", args.also or [])
    for question_id, text in also:
        if question_id in answers:
            raise ValueError(f"--also: question {question_id} is answered twice")
        answers[question_id] = _json_option(f"--also {question_id}", text)
    return answers


def _say_refusals(store: SqliteQuestionStore, question_ids: list[str], thread: str | None) -> None:
    """Tell the person answering again why the agent refused the answer given before."""
    for question_id in question_ids:
        for question in store.find(question_id, thread):
            if note := question.describe_refusal():
                _error(f"{question_id} (thread {question.envelope.thread_id}): {note}")


def _action_answer(
    question: StoredQuestion, action: str, more: str | None, force: bool
) -> dict[str, Any]:
    """``{"action": ACTION}`` (with the ``--answer`` fields), when ACTION is an allowed action.

    A question that states no actions (a bare interrupt) reads its whole answer as it likes:
    ``{"action": "reject"}`` is a truthy object that a yes/no check takes for yes. A batch of
    actions is answered one decision per action. Either way ACTION is refused and the form the
    question takes is shown.
    """
    from agent_wait.host._answering import decision

    envelope = question.envelope
    extra = None if more is None else _json_option("--answer", more)
    if extra is not None and not isinstance(extra, dict):
        raise ValueError(
            f'--answer: expected a JSON object such as \'{{"note": "ok"}}\', got {more}'
        )
    where = f"question {envelope.question_id} (thread {envelope.thread_id})"
    actions = batch_actions(envelope.question)
    if actions is not None and not force:
        raise AgentWaitError(
            f"{where} is a batch of {len(actions)} action(s): ACTION {action!r} does not say "
            f"which decision each takes; give one --decision per action, in order: "
            f"{answer_form(question.envelope)}"
        )
    if not envelope.allowed_actions and not force:
        raise AgentWaitError(
            f"{where} states no actions: ACTION {action!r} would send "
            f"{json.dumps({'action': action})}, which its code reads as it likes (a yes/no check "
            f"takes any object for yes). Send the answer it takes: {answer_form(question.envelope)}"
        )
    return decision(action, cast("dict[str, Any] | None", extra))


def _batch_answer(question: StoredQuestion, given: list[str]) -> dict[str, Any]:
    """``{"decisions": [...]}`` from one ``--decision`` per action of a middleware batch.

    Each is ``approve``, ``reject`` or ``reject:MESSAGE``, ``respond:MESSAGE``, or
    ``edit:{"arg": ...}`` (the changed arguments, merged into the asked ones); each must be one
    of its action's ``allowed_decisions``.
    """
    envelope = question.envelope
    actions = batch_actions(envelope.question)
    where = f"question {envelope.question_id} (thread {envelope.thread_id})"
    if actions is None:
        raise AgentWaitError(
            f"{where} is not a batch of actions: --decision answers one; {answer_form(question.envelope)}"
        )
    if len(given) != len(actions):
        raise ValueError(
            f"--decision: {where} has {len(actions)} action(s) "
            f"({', '.join(str(a.get('name')) for a in actions)}), one --decision each in order; "
            f"got {len(given)}"
        )
    decisions: list[dict[str, Any]] = []
    for index, (text, action) in enumerate(zip(given, actions, strict=True)):
        label = f"--decision {index + 1} ({action.get('name')})"
        kind, _, value = text.partition(":")
        allowed = cast("list[str]", action.get("allowed_decisions") or [])
        if kind not in allowed:
            raise ValueError(f"{label}: {kind!r} is not one of its allowed decisions {allowed}")
        decided: dict[str, Any] = {"type": kind}
        if kind == "edit":
            changes = _json_option(label, value) if value else None
            if not isinstance(changes, dict):
                raise ValueError(
                    f"{label}: edit takes the changed arguments, e.g. "
                    f"edit:{json.dumps(action.get('args') or {}, ensure_ascii=False)}"
                )
            asked = cast("dict[str, Any]", action.get("args") or {})
            args = {**asked, **cast("dict[str, Any]", changes)}
            decided["edited_action"] = {"name": action.get("name"), "args": args}
        elif kind == "respond" and not value:
            raise ValueError(f"{label}: respond takes the reply text: respond:TEXT")
        elif value and kind in ("reject", "respond"):
            decided["message"] = value
        elif value:
            raise ValueError(f"{label}: {kind} takes no value, got {value!r}")
        decisions.append(decided)
    return {"decisions": decisions}


def batch_actions(question: Any) -> list[dict[str, Any]] | None:
    """The actions of a batch question ``{"actions": [{"name", "allowed_decisions", ...}]}``."""
    actions: object = (
        cast("dict[str, Any]", question).get("actions") if isinstance(question, dict) else None
    )
    if not isinstance(actions, list) or not actions:
        return None
    items = cast("list[Any]", actions)
    if not all(isinstance(a, dict) and "allowed_decisions" in a for a in items):
        return None
    return cast("list[dict[str, Any]]", items)


def answer_form(envelope: WaitEnvelope) -> str:
    """The command that sends a valid answer: built from the question's ``answer_schema``.

    For a batch of actions, each action's first allowed decision.
    """
    command = f"agent-wait answer {envelope.question_id}"
    actions = batch_actions(envelope.question)
    if actions is not None:
        firsts = [str((a.get("allowed_decisions") or ["approve"])[0]) for a in actions]
        return command + "".join(f" --decision {kind}" for kind in firsts)
    example: object = example_answer(envelope.answer_schema, envelope.allowed_actions)
    fields = cast("dict[str, Any]", example) if isinstance(example, dict) else {}
    if set(fields) == {"action"} and envelope.allowed_actions:
        return f"{command} {fields['action']}"
    return f"{command} --json {shlex.quote(json.dumps(example, ensure_ascii=False))}"


def _cmd_answer(args: argparse.Namespace) -> int:
    from agent_wait.host._answering import answer, answer_many
    from agent_wait.host._errors import AnswerNotAccepted

    try:
        if args.question_id is None:
            raise ValueError("QUESTION_ID: name the question to answer")
        store = _store(args)
        try:
            _full_ids(args, store)
            asked = [
                args.question_id,
                *(q for q, _ in cast("list[tuple[str, str]]", args.also or [])),
            ]
            _say_refusals(store, asked, args.thread)
            answers = _answers(args, store)
            who = _who(args.by)
            if _votes_on(store, answers, args.thread):
                [(question_id, value)] = answers.items()
                one = answer(
                    question_id,
                    answer=value,
                    identity=who,
                    thread_id=args.thread,
                    force=args.force,
                    store=store,
                )
                questions, voted = [one.question], one.message is None
            else:
                many = answer_many(
                    answers, identity=who, thread_id=args.thread, force=args.force, store=store
                )
                questions, voted = many.questions, False
        except AnswerNotAccepted as refused:
            raise AgentWaitError(
                f"{refused}; send it with: {answer_form(refused.question.envelope)}"
            ) from None
        finally:
            store.close()
    except (AgentWaitError, ValueError, ValidationError) as error:
        _error(str(error))
        return 1
    except Exception as error:  # noqa: BLE001 - a failed send is reported, the question stays open
        _error(
            f"the answer could not be sent ({type(error).__name__}: {error}); "
            "the questions stay open"
        )
        return 1
    if voted:
        [question] = questions
        envelope = question.envelope
        print(
            f"{envelope.question_id} (thread {envelope.thread_id}) vote recorded: "
            f"{question.describe_votes()}; nothing sent yet"
        )
        return 0
    for question in questions:
        envelope = question.envelope
        print(
            f"{envelope.question_id} (thread {envelope.thread_id}) {question.describe_close()}: "
            f"{json.dumps(question.answer, ensure_ascii=False)}"
        )
    return 0


def _who(by: str | None) -> Identity:
    """The login name of the process, or ``--by`` where the configuration allows it."""
    from agent_wait.core._config import CONFIG_FILE
    from agent_wait.core._identity import Identity
    from agent_wait.host._approvers import ALLOW_BY_ENV, load_approver_config

    me = Identity.of_process()
    if by is None:
        return me
    config = load_approver_config()
    if not config.allow_by:
        raise ValueError(
            f"--by: answers are recorded under your login name ({me.subject}); to record "
            f"another name, set allow_by = true in the [approvers] table of {CONFIG_FILE} "
            f"(or {ALLOW_BY_ENV}=1), or leave --by out"
        )
    return Identity.claimed(by)


def _votes_on(store: QuestionStore, answers: Mapping[str, Any], thread: str | None) -> bool:
    """Whether this is one answer to a question with a quorum: a vote, which ``answer`` takes."""
    if len(answers) != 1:
        return False
    return any(q.envelope.quorum is not None for q in store.find(next(iter(answers)), thread))


def _cmd_cancel(args: argparse.Namespace) -> int:
    from agent_wait.host._answering import cancel

    try:
        store = _store(args)
        try:
            _full_ids(args, store)
            who = _who(args.by)
            question = cancel(args.question_id, identity=who, thread_id=args.thread, store=store)
        finally:
            store.close()
    except (AgentWaitError, ValueError) as error:
        _error(str(error))
        return 1
    envelope = question.envelope
    print(f"{envelope.question_id} (thread {envelope.thread_id}) {question.describe_close()}")
    return 0


def _cmd_resend(args: argparse.Namespace) -> int:
    from agent_wait.host._answering import resend

    try:
        store = _store(args)
        try:
            _full_ids(args, store)
            message = resend(args.question_id, thread_id=args.thread, store=store)
        finally:
            store.close()
    except (AgentWaitError, ValueError) as error:
        _error(str(error))
        return 1
    except Exception as error:  # noqa: BLE001 - a failed send is reported, not traced
        _error(f"the answer could not be sent ({type(error).__name__}: {error})")
        return 1
    print(
        f"{message['question_id']} (thread {message['thread_id']}) sent again: "
        f"{json.dumps(message['answer'], ensure_ascii=False)}"
    )
    return 0


def _cmd_show(args: argparse.Namespace) -> int:
    from agent_wait.host._answering import _lookup  # pyright: ignore[reportPrivateUsage]
    from agent_wait.host._asker import describe_asker

    try:
        store = _store(args)
        try:
            _full_ids(args, store)
            question = _lookup(store, args.question_id, args.thread)
        finally:
            store.close()
    except (AgentWaitError, ValueError) as error:
        _error(str(error))
        return 1
    envelope = question.envelope
    print(f"{envelope.question_id} (thread {envelope.thread_id}) {question.describe_close()}")
    print(f"question: {json.dumps(envelope.question, ensure_ascii=False)}")
    if envelope.allowed_actions:
        print(f"allowed_actions: {', '.join(envelope.allowed_actions)}")
    print(f"expires_at: {envelope.expires_at or '-'}")
    if asker := describe_asker(envelope):
        print(f"asked by: {asker}")
    if envelope.context is not None and envelope.context.messages:
        print("last messages:")
        for said in envelope.context.messages:
            print(f"  {said.role}: {' '.join(said.text.split())}")
    if question.identity_source is not None:
        print(
            f"identity_source: {question.identity_source} (how {question.answered_by} was identified)"
        )
    if question.answer is not None:
        print(f"answer: {json.dumps(question.answer, ensure_ascii=False)}")
    for vote in question.votes:
        print(
            f"vote: {vote['by']} at {vote['at']}: {json.dumps(vote['answer'], ensure_ascii=False)}"
        )
    if question.refusal is not None:
        print(question.describe_refusal())
        refused = json.dumps(question.refusal.get("answer"), ensure_ascii=False)
        by = question.refusal.get("by") or "unknown"
        print(f"refused answer: {refused} (by {by}, refused at {question.refusal.get('at')})")
    return 0


def _audit_log(args: argparse.Namespace) -> AuditLog:
    """The audit log beside the questions the arguments name: ``--store NAME`` or the sqlite inbox."""
    from agent_wait.core._audit import audit_log_of, sqlite_audit_log
    from agent_wait.host._answering import configured_store

    if not args.store:
        store = _store(args)
        store.close()
        return sqlite_audit_log(store.path)
    if args.path:
        raise ValueError("--store: the questions of a configured announcer, or --path, not both")
    configured = configured_store(args.store)
    try:
        log = audit_log_of(configured)
    finally:
        configured.close()
    if log is None:
        raise ValueError(f"--store: {args.store!r}: {configured!r} keeps no audit log")
    return log


def _cmd_audit(args: argparse.Namespace) -> int:
    from agent_wait.core._audit import by_question, verify

    if (args.question_id is None) == (args.export is None):
        _error("audit: name a QUESTION_ID to print and verify, or --export jsonl (not both)")
        return 1
    try:
        log = _audit_log(args)
        if args.export is not None:
            for entry in log.since(args.since):
                print(json.dumps(entry.to_dict(), ensure_ascii=False, sort_keys=True))
            return 0
        entries = log.entries(args.question_id, args.thread)
    except (AgentWaitError, ValueError) as error:
        _error(str(error))
        return 1
    if not entries:
        _error(f"no audit record of question {args.question_id} in {log!r}")
        return 1
    problems: list[str] = []
    for (thread, question_id), chain in by_question(entries).items():
        print(f"{question_id} (thread {thread}): {len(chain)} entries")
        for entry in chain:
            facts = json.dumps(entry.data, ensure_ascii=False, sort_keys=True)
            print(f"  {entry.seq:>3}  {entry.at}  {entry.kind:<9}  {facts}  {entry.hash[:19]}")
        problems += verify(chain)
    for problem in problems:
        _error(problem)
    if problems:
        return 1
    print("chain verified: every entry matches its hash and follows the one before")
    return 0


def _cmd_dead_letters(args: argparse.Namespace) -> int:
    from agent_wait.core._entries import default_entry

    try:
        entry = default_entry()
    except AgentWaitError as error:
        _error(str(error))
        return 1
    with entry:
        if args.redrive:
            missing = [i for i in args.redrive if not entry.redrive(i)]
            for message_id in args.redrive:
                if message_id not in missing:
                    print(f"redriven {message_id}")
            if missing:
                _error(f"no dead letter {', '.join(missing)} in {entry!r}")
                return 1
            return 0
        dead = entry.dead_letters()
    if args.json:
        print(json.dumps([dataclasses.asdict(d) for d in dead], indent=2, ensure_ascii=False))
        return 0
    if not dead:
        print("no dead letters")
        return 0
    for letter in dead:
        print(
            f"{letter.id}  thread {letter.thread_id or '-'}  {letter.attempts} attempts  "
            f"dead at {letter.dead_at}  {letter.error.splitlines()[0] if letter.error else ''}"
        )
        if letter.body is not None:  # a poison message: its body, escaped and cut
            print(f"  body: {letter.body}")
    return 0


def _sweep_once(args: argparse.Namespace) -> int:
    from agent_wait.core._ledger import SqliteLedger
    from agent_wait.host._answering import sweep

    store = _store(args, must_exist=False)
    if not store.path.is_file():
        # Nothing published yet: nothing is overdue (a scheduled sweep must not fail for it).
        store.close()
        print("no questions yet")
        return 0
    # The re-sent answers are recorded beside the questions swept, in the same file.
    ledger = SqliteLedger(store.path) if args.redrive_after is not None else None
    try:
        report = sweep(
            store=store, now=args.now, by=args.by, redrive_after=args.redrive_after, ledger=ledger
        )
    finally:
        store.close()
        if ledger is not None:
            ledger.close()
    for question in report.resent:
        envelope = question.envelope
        print(
            f"resent {envelope.question_id} (thread {envelope.thread_id}): its unconfirmed "
            f"answer was sent again; {question.describe_close()}"
        )
    for question in report.expired:
        envelope = question.envelope
        print(
            f"expired {envelope.question_id} (thread {envelope.thread_id}, due "
            f"{envelope.expires_at}): sent default {json.dumps(envelope.default, ensure_ascii=False)}"
        )
    for question in report.overdue:
        envelope = question.envelope
        print(
            f"overdue {envelope.question_id} (thread {envelope.thread_id}, due "
            f"{envelope.expires_at}): no default, left open"
        )
    for question in report.redriven:
        envelope = question.envelope
        print(
            f"redriven {envelope.question_id} (thread {envelope.thread_id}, "
            f"{question.describe_close()}): its answer sent again"
        )
    for question, error in report.failed:
        if question.status in ("answered", "expired"):  # a re-driven answer
            _error(f"{question.envelope.question_id}: answer not sent again ({error})")
            continue
        held = question.status == "sending"
        state = "sending" if held or error.startswith("SendUnconfirmed") else "open"
        what = "held answer" if held else "default"
        _error(f"{question.envelope.question_id}: {what} not sent ({error}); left {state}")
    for question in report.reminded:
        envelope = question.envelope
        print(f"reminded {envelope.question_id} (thread {envelope.thread_id})")
    for question in report.escalated:
        envelope = question.envelope
        to = ", ".join(f"{k}={v}" for k, v in (question.escalated_to or {}).items())
        print(f"escalated {envelope.question_id} (thread {envelope.thread_id}) to {to}")
    for question in report.warned:
        envelope = question.envelope
        print(
            f"last warning {envelope.question_id} (thread {envelope.thread_id}, due "
            f"{envelope.expires_at})"
        )
    if report.follow_ups_skipped:
        _error(
            f"{len(report.follow_ups_skipped)} questions' reminders, escalations or last "
            "warnings not sent: the store records no follow-ups"
        )
    # The events to the configured announcers that opted in (lifecycle_events).
    kinds = {event.event_id: event.type for event in report.published}
    for event in report.events:
        kind = kinds.get(event.event_id, "event")
        if event.ok:
            print(f"announced {kind} of {event.question_id} to {event.announcer}")
        else:
            _error(
                f"{event.question_id}: {kind} not announced to {event.announcer} ({event.error})"
            )
    return 1 if report.failed or not all(event.ok for event in report.events) else 0


def _cmd_sweep(args: argparse.Namespace) -> int:
    from agent_wait.host._answering import check_answerer

    try:
        check_answerer(args.by, "--by")
        if args.every is None:
            return _sweep_once(args)
        stop = threading.Event()

        def stopping(signum: int, frame: object) -> None:
            stop.set()

        previous = {sig: signal.signal(sig, stopping) for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            while not stop.is_set():
                _sweep_once(args)
                stop.wait(args.every)
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
        return 0
    except (AgentWaitError, ValueError) as error:
        _error(str(error))
        return 1


def _redrive_after(text: str) -> timedelta:
    from agent_wait.core._durations import parse_duration

    try:
        value: str | float = float(text)
    except ValueError:
        value = text
    try:
        return parse_duration(value, "--redrive-after")
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _seconds(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"expected positive seconds, got {text}")
    return value


def add_commands(commands: Any) -> None:
    """Add ``answer``, ``show``, ``cancel``, ``resend``, ``sweep`` and ``dead-letters`` to the ``agent-wait`` sub-command parser."""
    from agent_wait.host._answering import SWEEPER

    def store_options(parser: argparse.ArgumentParser) -> None:
        parser.add_argument(
            "--path", help="the inbox database file (default: the configured sqlite inbox)"
        )
        parser.add_argument(
            "--table", default="agent_wait_inbox", help="with --path: the table name"
        )

    answer = commands.add_parser(
        "answer",
        help="answer a question: record it and send it to the host's entry point",
        description="Look QUESTION_ID up in the inbox, record the answer (only if the question "
        'is still open) and send {**reply_with, "answer": ...} to the configured entry point. '
        'The answer is {"action": ACTION} (ACTION one of the question\'s allowed_actions), or '
        "the --answer object with ACTION merged in; for a batch of actions, one --decision per "
        "action; or, with --json, exactly that JSON value (the answer a question without "
        "allowed_actions takes, as its answer_schema says). --also answers more questions of "
        "the same thread in the same message, so the run resumes once. Each answer is checked "
        "first: against the question's allowed_actions and answer_schema, and for JSON every "
        "framework keeps (finite numbers, integers within 64 bits, valid Unicode, at most 64 "
        "KiB). Exit 1 if a question is unknown, already closed (saying by whom and when), or an "
        "answer is refused (saying where and why, and the command that sends a valid answer); "
        "nothing is recorded or sent then.",
    )
    answer.add_argument("question_id", metavar="QUESTION_ID", nargs="?", help=ID_HELP)
    answer.add_argument(
        "action", metavar="ACTION", nargs="?", help="one of the question's allowed_actions"
    )
    answer.add_argument("--answer", help="with ACTION, a JSON object: the rest of the answer")
    answer.add_argument(
        "--decision",
        action="append",
        metavar="DECISION",
        help="for a batch of actions, one per action in order: approve, reject or "
        "reject:MESSAGE, respond:MESSAGE, or edit:JSON (the changed arguments, e.g. "
        'edit:\'{"to": "ceo@example.com"}\'); each one of its action\'s allowed decisions',
    )
    answer.add_argument(
        "--json",
        metavar="VALUE",
        help="instead of ACTION: the whole answer, any JSON but null (e.g. '\"y\"', "
        '\'{"approved": true}\', an Agent Inbox list \'[{"type": "accept"}]\')',
    )
    answer.add_argument(
        "--also",
        nargs=2,
        action="append",
        metavar=("QUESTION_ID", "JSON"),
        help="answer another question of the same thread in the same message, with its whole "
        'answer as JSON (e.g. --also q2 \'{"action": "reject"}\'); repeatable',
    )
    answer.add_argument(
        "--by",
        help="who answers, when the configuration allows a name other than your login name "
        "([approvers] allow_by; recorded as claimed)",
    )
    answer.add_argument("--thread", help="the thread, if several threads asked QUESTION_ID")
    answer.add_argument(
        "--force",
        action="store_true",
        help="send without checking allowed_actions and answer_schema (what no framework "
        "can keep is refused anyway)",
    )
    store_options(answer)
    answer.set_defaults(handler=_cmd_answer)

    cancel = commands.add_parser(
        "cancel",
        help="close a question without answering it (nothing is sent)",
        description="Mark QUESTION_ID cancelled if it is still open, so approvers and the sweeper "
        "leave it alone. Nothing is sent: the thread keeps waiting. Only someone who may answer "
        "the question may cancel it. Exit 1 if it is unknown, already closed, or you may not "
        "answer it.",
    )
    cancel.add_argument("question_id", metavar="QUESTION_ID", help=ID_HELP)
    cancel.add_argument(
        "--by",
        help="who cancels, when the configuration allows a name other than your login name "
        "([approvers] allow_by; recorded as claimed)",
    )
    cancel.add_argument("--thread", help="the thread, if several threads asked QUESTION_ID")
    store_options(cancel)
    cancel.set_defaults(handler=_cmd_cancel)

    again = commands.add_parser(
        "resend",
        help="send the recorded answer of a sending, answered or expired question again",
        description='Send {**reply_with, "answer": <the recorded answer>} of QUESTION_ID to the '
        "entry point again: for a send that was not confirmed (the question is sending: the "
        "exact message recorded is sent, and once the entry point takes it the question is "
        "answered), or a process that died between recording an answer and sending it. A "
        "second copy of an answer that did arrive is harmless (the host reports a duplicate). "
        "Exit 1 if the question is open, cancelled or unknown.",
    )
    again.add_argument("question_id", metavar="QUESTION_ID", help=ID_HELP)
    again.add_argument("--thread", help="the thread, if several threads asked QUESTION_ID")
    store_options(again)
    again.set_defaults(handler=_cmd_resend)

    show = commands.add_parser(
        "show",
        help="show one question: what it asks, its state, and why the agent refused an answer",
        description="Print QUESTION_ID's question, allowed actions, deadline and state (open, "
        "sending, answered...; who and when), its recorded answer, and, when the agent refused "
        "the answer given and the question was opened again, the agent's reason.",
    )
    show.add_argument("question_id", metavar="QUESTION_ID", help=ID_HELP)
    show.add_argument("--thread", help="the thread, if several threads asked QUESTION_ID")
    store_options(show)
    show.set_defaults(handler=_cmd_show)

    audit = commands.add_parser(
        "audit",
        help="print a question's audit record and verify its hash chain, or export every record",
        description="Print QUESTION_ID's audit record (asked, delivered, votes, answered, "
        "resumed, executed...) and verify it: each entry's hash, the chain of hashes, and that "
        "every executed call ran with the approved arguments. Exit 1 if anything does not "
        "verify. --export jsonl prints every entry (--since: from that time) as JSON lines.",
    )
    audit.add_argument("question_id", metavar="QUESTION_ID", nargs="?")
    audit.add_argument("--thread", help="the thread, if several threads asked QUESTION_ID")
    audit.add_argument("--export", choices=["jsonl"], help="print every entry as JSON lines")
    audit.add_argument("--since", help="with --export: entries at or after this RFC 3339 time")
    audit.add_argument(
        "--store",
        metavar="NAME",
        help="the audit log beside the questions of the configured announcer NAME (postgres, "
        "dynamodb) (default: the sqlite inbox's)",
    )
    store_options(audit)
    audit.set_defaults(handler=_cmd_audit)

    dead = commands.add_parser(
        "dead-letters",
        help="list (or redrive) the messages the entry point dead-lettered",
        description="List the messages of the configured entry point that failed max_attempts "
        "times (or were malformed), with the last error. --redrive ID puts one back as new.",
    )
    dead.add_argument("--redrive", nargs="+", metavar="ID", help="put these dead letters back")
    dead.add_argument("--json", action="store_true", help="print JSON, message bodies included")
    dead.set_defaults(handler=_cmd_dead_letters)

    sweep = commands.add_parser(
        "sweep",
        help="send the default of every open question past its deadline",
        description="Every open question whose expires_at has passed and that has a default is "
        "marked expired and its default sent as an ordinary answer (exactly once, even with "
        "several sweepers). Questions without a default stay open and are listed as overdue. "
        "Open questions whose policy asks for reminders, an escalation or a last warning get "
        "each once, when due (wait.reminder, wait.escalated, wait.last_warning). Each expiry "
        "and follow-up is announced to the configured announcers whose entry opts in to its "
        "type (lifecycle_events).",
    )
    when = sweep.add_mutually_exclusive_group()
    when.add_argument("--once", action="store_true", help="sweep once and exit (the default)")
    when.add_argument(
        "--every", type=_seconds, metavar="SECONDS", help="sweep again every SECONDS until stopped"
    )
    sweep.add_argument("--now", help="the time to compare with (RFC 3339; default: now)")
    sweep.add_argument(
        "--redrive-after",
        type=_redrive_after,
        metavar="DURATION",
        help="also send again, once, the recorded answer of each question answered between "
        "2 x DURATION and DURATION ago (ISO 8601 such as PT10M, or seconds), so a run a crashed "
        "worker left unfinished is continued; sweep at least every DURATION",
    )
    sweep.add_argument("--by", default=SWEEPER, help=f"the name recorded (default: {SWEEPER})")
    store_options(sweep)
    sweep.set_defaults(handler=_cmd_sweep)
