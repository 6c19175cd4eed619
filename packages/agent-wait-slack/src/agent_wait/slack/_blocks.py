"""Block Kit for a question: the message, its status lines, and the modals that answer it.

Pure functions over the envelope: the announcer posts what they build, the interactivity app
rebuilds the same message to update it, and reads the modals' submitted values back.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from typing import Any, cast

from agent_wait.core import LifecycleEvent, StoredQuestion, WaitEnvelope

ANSWER = "agent_wait_answer"
"""``action_id`` prefix of the buttons that answer with one action (``agent_wait_answer:approve``)."""
EDIT = "agent_wait_edit"
"""``action_id`` of the button that opens the edit modal, and that modal's ``callback_id``."""
DECIDE = "agent_wait_decide"
"""``action_id`` of a batch's "Decide each..." button, and that modal's ``callback_id``."""
ALL = "agent_wait_all"
"""``action_id`` prefix of a batch's "Approve all" / "Reject all" (``agent_wait_all:approve``)."""

# Slack's limits: 10 fields a section, 2000 characters a field, 50 blocks a message, 150
# characters of plain text in a header, 2000 characters of a button value, 3000 of metadata.
_FIELDS = 10
_MAX_FIELD = 300
_MAX_ARGUMENTS = 20
_MAX_ACTIONS = 10
_MAX_HEADER = 150
_MAX_VALUE = 2000
_LABELS = {"approve": "Approve", "reject": "Reject", "edit": "Edit", "respond": "Respond"}
_STYLES = {"approve": "primary", "reject": "danger"}
# A batch is summarised under its most restrictive decision (what the inbox records too).
_SUMMARY_ORDER = ("reject", "respond", "edit", "approve")


def shorten(value: Any, limit: int = _MAX_FIELD) -> str:
    """``value`` as text (JSON unless a string), cut at ``limit`` characters."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _plain(text: str, limit: int = 75) -> dict[str, Any]:
    return {"type": "plain_text", "text": shorten(text, limit), "emoji": True}


def escape(text: str) -> str:
    """Text shown as itself in mrkdwn: ``&``, ``<`` and ``>`` escaped as Slack asks."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def mapping(value: Any) -> Mapping[str, Any]:
    """``value`` if it is a JSON object, else an empty one (envelope content is free-form)."""
    return cast("Mapping[str, Any]", value) if isinstance(value, Mapping) else {}


def function_of(envelope: WaitEnvelope) -> str | None:
    """The function that asks: the envelope's source, else the question's ``function``."""
    if envelope.source is not None and envelope.source.function:
        return envelope.source.function
    named = mapping(envelope.question).get("function")
    return named if isinstance(named, str) else None


def arguments_of(envelope: WaitEnvelope) -> Mapping[str, Any] | None:
    """The arguments of a ``@wait`` call, or None when the question is not one."""
    args = mapping(envelope.question).get("args")
    return cast("Mapping[str, Any]", args) if isinstance(args, Mapping) else None


def batch_actions(envelope: WaitEnvelope) -> list[Mapping[str, Any]] | None:
    """The actions of a middleware batch (one decision each), or None if it is not one."""
    actions = mapping(envelope.question).get("actions")
    if not isinstance(actions, list) or not actions:
        return None
    items = cast("list[Any]", actions)
    if not all(isinstance(a, Mapping) for a in items):
        return None
    return [cast("Mapping[str, Any]", a) for a in items]


def allowed_decisions(action: Mapping[str, Any]) -> list[str]:
    """The decisions a batch action takes (``approve``, ``edit``, ``reject``, ``respond``)."""
    allowed = action.get("allowed_decisions")
    if not isinstance(allowed, list):
        return []
    return [d for d in cast("list[Any]", allowed) if isinstance(d, str)]


def summary(decisions: list[dict[str, Any]]) -> str:
    """The ``action`` a batch's answer carries: the most restrictive of its decisions."""
    kinds = {str(d["type"]) for d in decisions}
    return next((k for k in _SUMMARY_ORDER if k in kinds), str(decisions[0]["type"]))


def title(envelope: WaitEnvelope) -> str:
    """``Approval needed: <function>``, or a generic title for a question that names none."""
    function = function_of(envelope)
    if batch_actions(envelope) is not None and function is None:
        return "Approval needed: " + ", ".join(
            str(a.get("name")) for a in batch_actions(envelope) or []
        )
    return f"Approval needed: {function}" if function else "An agent is waiting for your answer"


def fallback_text(envelope: WaitEnvelope) -> str:
    """The message's ``text``: what notifications and screen readers say."""
    return f"{title(envelope)} (thread {envelope.thread_id})"


def when(at: str | datetime) -> str:
    """A time Slack shows in each reader's time zone, with a UTC fallback (``14:02 UTC``)."""
    moment = datetime.fromisoformat(at.replace("Z", "+00:00")) if isinstance(at, str) else at
    fallback = moment.strftime("%Y-%m-%d %H:%M UTC")
    return f"<!date^{int(moment.timestamp())}^{{date_short_pretty}} at {{time}}|{fallback}>"


def _field_sections(arguments: Mapping[str, Any]) -> list[dict[str, Any]]:
    items = list(arguments.items())
    shown = [f"*{escape(str(name))}*\n{escape(shorten(value))}" for name, value in items]
    shown = shown[:_MAX_ARGUMENTS]
    if len(items) > _MAX_ARGUMENTS:
        shown.append(f"_and {len(items) - _MAX_ARGUMENTS} more arguments_")
    return [
        {
            "type": "section",
            "fields": [{"type": "mrkdwn", "text": text} for text in shown[i : i + _FIELDS]],
        }
        for i in range(0, len(shown), _FIELDS)
    ]


def _about(envelope: WaitEnvelope) -> str:
    parts = [
        f"*Deadline:* {when(envelope.expires_at)}" if envelope.expires_at else "*Deadline:* none"
    ]
    if envelope.default is not None:
        parts.append(f"*If nobody answers:* {escape(default_text(envelope.default))}")
    parts.append(f"*Thread:* `{escape(shorten(envelope.thread_id, 80))}`")
    return "   ".join(parts)


def default_text(default: Any) -> str:
    """A question's default as a person reads it: its action, else its JSON."""
    action = mapping(default).get("action")
    return action if isinstance(action, str) and len(mapping(default)) == 1 else shorten(default)


def button_value(envelope: WaitEnvelope) -> str:
    """What every button of the question carries: its id and, when it fits, its thread."""
    value = json.dumps({"q": envelope.question_id, "t": envelope.thread_id})
    return value if len(value) <= _MAX_VALUE else json.dumps({"q": envelope.question_id})


def _button(text: str, action_id: str, value: str, style: str | None = None) -> dict[str, Any]:
    button: dict[str, Any] = {
        "type": "button",
        "text": _plain(text),
        "action_id": action_id,
        "value": value,
    }
    if style is not None:
        button["style"] = style
    return button


def _buttons(envelope: WaitEnvelope) -> list[dict[str, Any]]:
    value = button_value(envelope)
    actions = batch_actions(envelope)
    if actions is not None:
        buttons: list[dict[str, Any]] = []
        for kind in ("approve", "reject"):
            if all(kind in allowed_decisions(a) for a in actions):
                buttons.append(
                    _button(f"{_LABELS[kind]} all", f"{ALL}:{kind}", value, _STYLES[kind])
                )
        buttons.append(_button("Decide each...", DECIDE, value))
        return buttons
    buttons = [
        _button(
            _LABELS.get(action, action.replace("_", " ").capitalize()),
            f"{ANSWER}:{action}",
            value,
            _STYLES.get(action),
        )
        for action in envelope.allowed_actions[:20]
    ]
    if envelope.answer_schema is not None or not envelope.allowed_actions:
        buttons.append(_button("Edit..." if envelope.allowed_actions else "Answer...", EDIT, value))
    return buttons


def question_blocks(
    envelope: WaitEnvelope, status: str | None = None, *, buttons: bool = True
) -> list[dict[str, Any]]:
    """The message of a question: what is asked, with what, until when; a status; the buttons.

    ``status`` is a line of mrkdwn shown under the question (already escaped: it may hold
    mentions and dates); ``buttons`` False leaves the question without any (it is closed).
    """
    blocks: list[dict[str, Any]] = [
        {"type": "header", "text": _plain(title(envelope), _MAX_HEADER)}
    ]
    actions = batch_actions(envelope)
    arguments = arguments_of(envelope)
    if actions is not None:
        for index, action in enumerate(actions[:_MAX_ACTIONS]):
            text = f"*{index + 1}. {escape(str(action.get('name')))}*"
            description = action.get("description")
            if isinstance(description, str) and description:
                text += f"\n{escape(shorten(description.splitlines()[0], 200))}"
            blocks.append({"type": "section", "text": {"type": "mrkdwn", "text": text}})
            blocks.extend(_field_sections(mapping(action.get("args"))))
        if len(actions) > _MAX_ACTIONS:
            blocks.append(
                _context(f"_and {len(actions) - _MAX_ACTIONS} more actions, in the inbox_")
            )
    elif arguments is not None:
        if arguments:
            blocks.extend(_field_sections(arguments))
    else:
        blocks.append(
            {
                "type": "section",
                "text": {"type": "mrkdwn", "text": escape(shorten(envelope.question, 2000))},
            }
        )
    blocks.append(_context(_about(envelope)))
    if status is not None:
        blocks.append({"type": "section", "text": {"type": "mrkdwn", "text": status[:3000]}})
    if buttons:
        blocks.append({"type": "actions", "block_id": ANSWER, "elements": _buttons(envelope)})
    return blocks


def _context(text: str) -> dict[str, Any]:
    return {"type": "context", "elements": [{"type": "mrkdwn", "text": text[:3000]}]}


def _said(answer: Any) -> str:
    fields = mapping(answer)
    decisions = fields.get("decisions")
    if isinstance(decisions, list):
        kinds = [str(mapping(d).get("type")) for d in cast("list[Any]", decisions)]
        return "Decided (" + ", ".join(kinds) + ")"
    action = fields.get("action")
    if isinstance(action, str):
        verb = {"approve": "Approved", "reject": "Rejected", "edit": "Edited"}.get(action)
        edited = " with changes" if "args" in fields and action == "approve" else ""
        return (verb or f"Answered {action}") + edited
    return "Answered"


def answered_status(answer: Any, who: str, at: str | datetime) -> str:
    """``:white_check_mark: Approved by <@U123> at 14:02`` (``who`` is mrkdwn: a mention)."""
    icon = ":x:" if mapping(answer).get("action") == "reject" else ":white_check_mark:"
    return f"{icon} *{_said(answer)}* by {who} at {when(at)}"


def event_status(kind: str, by: str | None, at: str, default: Any, reason: str | None) -> str:
    """The line a lifecycle event puts on the message."""
    if kind == "wait.expired":
        applied = f"default {escape(default_text(default))}" if default is not None else "default"
        return f":hourglass: *Expired:* {applied} applied at {when(at)}"
    if kind == "wait.answer_refused":
        why = escape(shorten(reason or "no reason given", 500))
        return f":warning: *The agent refused this answer:* {why}. Answer again."
    who = f" by {escape(by)}" if by else ""
    return f":white_check_mark: *Answered*{who} at {when(at)}"


def closed_status(status: str, by: str | None, at: str | None) -> str:
    """The line of a question someone else closed first: ``Answered by alice at 14:02``."""
    who = f" by {escape(by)}" if by else ""
    moment = f" at {when(at)}" if at else ""
    return f":lock: *{escape(status.capitalize())}*{who}{moment}"


def mention(target: str) -> str:
    """``<@U0123ABCD>`` for a user, ``<!subteam^S0123ABCD>`` for a user group."""
    return f"<!subteam^{target}>" if target.startswith("S") else f"<@{target}>"


def follow_up_text(event: LifecycleEvent, envelope: WaitEnvelope, mentions: list[str]) -> str:
    """The thread reply of a reminder, an escalation or the last warning, with its mentions."""
    if event.type == "wait.reminder":
        text = ":bell: *Reminder:* this question is still waiting for an answer."
    elif event.type == "wait.escalated":
        text = ":arrow_up: *Escalated:* nobody has answered yet, so it now goes to you as well."
    else:
        applied = (
            f"the default ({escape(default_text(envelope.default))})"
            if envelope.default is not None
            else "the deadline"
        )
        text = f":alarm_clock: *Last call:* unless someone answers, {applied} decides."
    if envelope.expires_at is not None:
        text += f" Deadline: {when(envelope.expires_at)}."
    return " ".join([*(mention(m) for m in mentions), text])


def votes_status(question: StoredQuestion) -> str | None:
    """``:ballot_box_with_ballot: 1 of 2 approvals, waiting for finance: approved by @alice``.

    None for a question without a quorum.
    """
    counted = question.tally
    if counted is None:
        return None
    waiting_for = question.envelope.tags.get("approver_group")
    line = f":ballot_box_with_ballot: *{escape(counted.describe(waiting_for))}*"
    if counted.approvals and counted.decision is None:
        line += f": approved by {escape(', '.join(counted.approvals))}"
    return line


# --- the modals -----------------------------------------------------------------------------------


def _modal(callback_id: str, heading: str, metadata: str, blocks: list[dict[str, Any]]) -> Any:
    return {
        "type": "modal",
        "callback_id": callback_id,
        "title": _plain(heading, 24),
        "submit": _plain("Send", 24),
        "close": _plain("Cancel", 24),
        "private_metadata": metadata,
        "blocks": blocks[:100],
    }


def _schema_type(schema: Mapping[str, Any]) -> str | None:
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in cast("list[Any]", kind) if k != "null"), None)
    return kind if isinstance(kind, str) else None


def _option(value: Any) -> dict[str, Any]:
    return {"text": _plain(shorten(value, 75)), "value": json.dumps(value)[:150]}


def _element(schema: Mapping[str, Any], initial: Any) -> dict[str, Any]:
    """The input element for one value of ``schema``, holding ``initial`` when there is one."""
    choices = schema.get("enum")
    if isinstance(choices, list) and choices:
        options = [_option(v) for v in cast("list[Any]", choices)[:100]]
        element: dict[str, Any] = {"type": "static_select", "action_id": "v", "options": options}
        if initial in choices:
            element["initial_option"] = _option(initial)
        return element
    kind = _schema_type(schema)
    if kind == "boolean":
        options = [_option(True), _option(False)]
        element = {"type": "static_select", "action_id": "v", "options": options}
        if isinstance(initial, bool):
            element["initial_option"] = _option(initial)
        return element
    if kind in ("integer", "number"):
        element = {
            "type": "number_input",
            "action_id": "v",
            "is_decimal_allowed": kind == "number",
        }
        if isinstance(initial, int | float) and not isinstance(initial, bool):
            element["initial_value"] = str(initial)
        return element
    element = {"type": "plain_text_input", "action_id": "v"}
    if kind == "string":
        if isinstance(initial, str) and initial:
            element["initial_value"] = initial[:3000]
        element["multiline"] = isinstance(initial, str) and len(initial) > 60
    else:
        element["multiline"] = True
        if initial is not None:
            element["initial_value"] = json.dumps(initial, ensure_ascii=False)[:3000]
    return element


def _hint(schema: Mapping[str, Any]) -> str | None:
    kind = _schema_type(schema)
    if "enum" in schema or kind in ("string", "integer", "number", "boolean"):
        return None
    return "JSON"


def _input(
    block_id: str, label: str, schema: Mapping[str, Any], initial: Any, optional: bool
) -> dict[str, Any]:
    block: dict[str, Any] = {
        "type": "input",
        "block_id": block_id,
        "label": _plain(label, 2000),
        "element": _element(schema, initial),
        "optional": optional,
    }
    hint = _hint(schema)
    if hint is not None:
        block["hint"] = _plain(hint, 2000)
    return block


def edit_fields(envelope: WaitEnvelope) -> list[tuple[str, Mapping[str, Any]]]:
    """The edit modal's fields from the question's ``answer_schema``: (path, schema) pairs.

    ``action`` and the other top-level properties by name; the properties of ``args`` (the
    call's arguments) as ``args.<name>``; a question whose answer is not an object, or has no
    schema, is one field ``$`` taking the whole answer.
    """
    schema = envelope.answer_schema
    properties: Mapping[str, Any] = mapping(schema.get("properties")) if schema is not None else {}
    if schema is None or _schema_type(schema) != "object" or not properties:
        return [("$", schema or {})]
    fields: list[tuple[str, Mapping[str, Any]]] = []
    for name, sub in properties.items():
        below = mapping(mapping(sub).get("properties"))
        if name == "args" and below:
            fields.extend((f"args.{arg}", mapping(arg_schema)) for arg, arg_schema in below.items())
        else:
            fields.append((name, mapping(sub)))
    return fields


def edit_modal(envelope: WaitEnvelope, metadata: str) -> Any:
    """The modal "Edit..." opens: one input per field of the question's ``answer_schema``."""
    schema = envelope.answer_schema or {}
    required = {str(r) for r in cast("list[Any]", schema.get("required") or [])}
    arguments = arguments_of(envelope) or {}
    blocks: list[dict[str, Any]] = [
        {"type": "section", "text": {"type": "mrkdwn", "text": f"*{escape(title(envelope))}*"}}
    ]
    description = schema.get("description")
    if isinstance(description, str) and description:
        blocks.append(_context(escape(shorten(description, 500))))
    for path, field_schema in edit_fields(envelope):
        if path == "$":
            label = "Answer (JSON, or text)"
            blocks.append(_input(f"f:{path}", label, field_schema, None, optional=False))
        elif path.startswith("args."):
            name = path.removeprefix("args.")
            blocks.append(
                _input(f"f:{path}", name, field_schema, arguments.get(name), optional=True)
            )
        else:
            initial = "approve" if path == "action" else None
            blocks.append(
                _input(f"f:{path}", path, field_schema, initial, optional=path not in required)
            )
    return _modal(EDIT, "Edit and answer", metadata, blocks)


def decide_modal(envelope: WaitEnvelope, metadata: str) -> Any:
    """The modal of a batch: one decision per action, a message, edited arguments for ``edit``."""
    blocks: list[dict[str, Any]] = []
    for index, action in enumerate(batch_actions(envelope) or []):
        name = str(action.get("name"))
        args = mapping(action.get("args"))
        blocks.append(
            {
                "type": "section",
                "text": {
                    "type": "mrkdwn",
                    "text": f"*{index + 1}. {escape(name)}*\n`{escape(shorten(dict(args), 500))}`",
                },
            }
        )
        allowed = allowed_decisions(action)
        blocks.append(
            _input(f"d:{index}", "Decision", {"enum": allowed}, None, optional=False),
        )
        if "edit" in allowed:
            blocks.append(
                _input(f"a:{index}", "Arguments, for edit", {}, dict(args), optional=True)
            )
        if "reject" in allowed or "respond" in allowed:
            blocks.append(
                _input(
                    f"m:{index}",
                    "Message, for reject or respond",
                    {"type": "string"},
                    None,
                    optional=True,
                )
            )
    return _modal(DECIDE, "Decide each action", metadata, blocks)


class FieldProblem(ValueError):
    """A submitted value that is not what its field takes.

    Attributes:
        block_id: The modal's input block, where Slack shows the message.
    """

    def __init__(self, block_id: str, message: str) -> None:
        super().__init__(message)
        self.block_id = block_id


def _submitted(values: Mapping[str, Any], block_id: str) -> Any:
    """The raw value of an input block: text, a number's text, or a selected option's JSON."""
    state = mapping(mapping(values.get(block_id)).get("v"))
    option = state.get("selected_option")
    if isinstance(option, Mapping):
        return json.loads(str(cast("Mapping[str, Any]", option).get("value")))
    value = state.get("value")
    return value if isinstance(value, str) and value != "" else None


def _typed(block_id: str, schema: Mapping[str, Any], value: Any) -> Any:
    """A submitted value as the JSON its schema wants; FieldProblem when it is not that."""
    if not isinstance(value, str) or "enum" in schema:
        return value
    kind = _schema_type(schema)
    if kind == "string":
        return value
    if kind == "integer":
        try:
            return int(value)
        except ValueError:
            raise FieldProblem(block_id, f"expected a whole number, got {value[:40]!r}") from None
    if kind == "number":
        try:
            number = float(value)
        except ValueError:
            raise FieldProblem(block_id, f"expected a number, got {value[:40]!r}") from None
        return int(number) if number.is_integer() and "." not in value else number
    try:
        return json.loads(value)
    except ValueError:
        if kind is None and block_id == "f:$":
            return value  # a whole answer that is not JSON is text
        raise FieldProblem(block_id, f"expected JSON, got {value[:40]!r}") from None


def edit_answer(envelope: WaitEnvelope, values: Mapping[str, Any]) -> Any:
    """The answer an edit modal's submitted ``values`` give (its ``view.state.values``).

    Arguments left as they were are not sent; if any changed, ``args`` holds them all.

    Raises:
        FieldProblem: A value is not of its field's type, or nothing was given.
    """
    fields = edit_fields(envelope)
    if fields[0][0] == "$":
        value = _typed("f:$", fields[0][1], _submitted(values, "f:$"))
        if value is None:
            raise FieldProblem("f:$", "give an answer")
        return value
    answer: dict[str, Any] = {}
    asked = dict(arguments_of(envelope) or {})
    args = dict(asked)
    for path, schema in fields:
        block_id = f"f:{path}"
        value = _typed(block_id, schema, _submitted(values, block_id))
        if value is None:
            continue
        if path.startswith("args."):
            args[path.removeprefix("args.")] = value
        else:
            answer[path] = value
    if args != asked:
        answer["args"] = args
    return answer


def decide_answer(envelope: WaitEnvelope, values: Mapping[str, Any]) -> dict[str, Any]:
    """The answer of a batch from the decide modal's ``values``: one decision per action.

    Raises:
        FieldProblem: A decision is missing, an edit's arguments are not a JSON object, or a
            respond has no message.
    """
    decisions: list[dict[str, Any]] = []
    for index, action in enumerate(batch_actions(envelope) or []):
        kind = _submitted(values, f"d:{index}")
        if not isinstance(kind, str):
            raise FieldProblem(f"d:{index}", "choose a decision")
        decision: dict[str, Any] = {"type": kind}
        message = _submitted(values, f"m:{index}")
        if kind == "edit":
            edited = _typed(f"a:{index}", {}, _submitted(values, f"a:{index}"))
            if edited is None:
                edited = dict(mapping(action.get("args")))
            if not isinstance(edited, Mapping):
                raise FieldProblem(f"a:{index}", "expected the arguments as a JSON object")
            decision["edited_action"] = {"name": action.get("name"), "args": edited}
        elif kind in ("reject", "respond") and isinstance(message, str):
            decision["message"] = message[:2000]
        elif kind == "respond":
            raise FieldProblem(f"m:{index}", "a respond decision needs the reply text")
        decisions.append(decision)
    return {"action": summary(decisions), "decisions": decisions}


def all_answer(envelope: WaitEnvelope, kind: str) -> dict[str, Any]:
    """A batch answered with one decision for every action (``Approve all``, ``Reject all``)."""
    decisions = [{"type": kind} for _ in batch_actions(envelope) or []]
    return {"action": kind, "decisions": decisions}
