"""Slack's Interactivity Request URL: button clicks and modal submissions, answered through core."""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, cast
from urllib.parse import parse_qs

from slack_sdk.errors import SlackApiError
from slack_sdk.signature import SignatureVerifier
from starlette.applications import Starlette
from starlette.background import BackgroundTask
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import BaseRoute, Mount, Route

from agent_wait.core import (
    AgentWaitError,
    ConfigError,
    EntryPoint,
    Identity,
    QuestionStore,
    StoredQuestion,
    announcer,
    answer_problem,
    load_config,
    log_safe,
)
from agent_wait.host import (
    AlreadyVoted,
    AnswerNotAccepted,
    QuestionClosed,
    QuestionDecided,
    SendUnconfirmed,
    answer,
    default_store,
)
from agent_wait.slack._announcer import SlackAnnounce
from agent_wait.slack._api import call, error_code
from agent_wait.slack._blocks import (
    ALL,
    ANSWER,
    DECIDE,
    EDIT,
    FieldProblem,
    all_answer,
    answered_status,
    closed_status,
    decide_answer,
    decide_modal,
    edit_answer,
    edit_modal,
    votes_status,
)

logger = logging.getLogger(__name__)

# Slack's interactivity payloads are a few kilobytes; a modal's state at most a few dozen.
_MAX_BODY = 256 * 1024
_MAX_METADATA = 3000
# An answerer's name is at most 64 characters.
_MAX_NAME = 64
_PLACE = re.compile(r"^answer(?:\.decisions\[(?P<index>\d+)\]|\.(?P<path>[\w.]+))")


@dataclass(frozen=True, slots=True)
class SlackUser:
    """Who clicked, as Slack says in the signed request: recorded as who answered.

    Attributes:
        name: ``@<username>``, the name recorded as ``answered_by``.
        user_id: The Slack user ID (``U0123ABCD``).
        team_id: The workspace's ID.
        identity_source: ``"slack"``: where the identity comes from.
    """

    name: str
    user_id: str
    team_id: str | None
    identity_source: str = "slack"

    @property
    def mention(self) -> str:
        """``<@U0123ABCD>``: Slack shows the person's current display name."""
        return f"<@{self.user_id}>"


def slack_user(payload: Mapping[str, Any]) -> SlackUser:
    """The person a payload names (its ``user``): their ``@username``, ID and workspace."""
    user = _mapping(payload.get("user"))
    user_id = str(user.get("id") or "unknown")
    handle = user.get("username") or user.get("name") or user_id
    team = user.get("team_id") or _mapping(payload.get("team")).get("id")
    return SlackUser(f"@{handle}"[:_MAX_NAME], user_id, None if team is None else str(team))


def _mapping(value: Any) -> Mapping[str, Any]:
    return cast("Mapping[str, Any]", value) if isinstance(value, Mapping) else {}


def configured_slack() -> SlackAnnounce:
    """The ``slack`` announcer of the configuration (``agent-wait.toml``, ``AGENT_WAIT_ANNOUNCE``).

    Raises:
        ConfigError: None is configured, its options are invalid, or it has no signing secret.
    """
    for entry in load_config().announce:
        if entry.use == "slack":
            built = announcer("slack", **entry.options)
            if not isinstance(built, SlackAnnounce):
                raise ConfigError(f"announcer 'slack' is {type(built).__name__}, not SlackAnnounce")
            return built
    raise ConfigError(
        "slack: no 'slack' announcer is configured; add an announce entry "
        '{"use": "slack", "token_env": ..., "signing_secret_env": ..., "channel": ...}'
    )


def interactivity_routes(
    slack: SlackAnnounce,
    store: QuestionStore,
    *,
    entry: EntryPoint | None = None,
    path: str = "/interactivity",
) -> list[BaseRoute]:
    """The route Slack posts clicks and modal submissions to (``POST <path>``).

    Every request must carry Slack's signature (``X-Slack-Signature``, v0 HMAC-SHA256 of the
    timestamp and the body with the app's signing secret) and a timestamp within five minutes:
    anything else is refused with 401 before it is read. A click is acknowledged at once (Slack
    waits three seconds at most), then handled: a click on an action's button answers with
    that action; **Edit...** and **Decide each...** open a modal (``views.open``) whose
    submission answers. Every answer goes through :func:`agent_wait.host.answer` with the
    clicking Slack user as who answered (``@username``): the question's checks, then the
    compare-and-set, so of two people clicking at once one wins and the other is told, in a
    message only they see, who answered and when. The question's messages are then updated in
    place (``chat.update``): "Approved by @x at 14:02".

    Raises:
        ConfigError: The announcer has no ``signing_secret``.
    """
    secret = slack.signing_secret
    if secret is None:
        raise ConfigError(
            "announcer 'slack': option 'signing_secret' is needed to receive Slack's requests "
            "(give it as signing_secret_env)"
        )
    handler = _Interactivity(slack, store, entry, SignatureVerifier(secret))
    return [Route(path, handler.receive, methods=["POST"])]


def interactivity_app(
    slack: SlackAnnounce | None = None,
    store: QuestionStore | None = None,
    *,
    entry: EntryPoint | None = None,
) -> Starlette:
    """The ASGI app serving ``POST /slack/interactivity`` and ``GET /healthz``.

    Serve it with uvicorn (``agent-wait slack serve``), or let ``agent-wait inbox serve`` mount
    the same route. See :func:`interactivity_routes`.

    Args:
        slack: The announcer, with the bot token and signing secret (default: the configured
            ``slack`` announcer).
        store: The question store (default: the inbox of the configured sqlite announcer).
        entry: Where answers are sent (default: as :func:`agent_wait.host.answer` chooses).
    """
    slack = slack if slack is not None else configured_slack()
    store = store if store is not None else default_store()

    async def health(request: Request) -> Response:
        return PlainTextResponse("ok")

    routes = interactivity_routes(slack, store, entry=entry)
    return Starlette(routes=[Mount("/slack", routes=routes), Route("/healthz", health)])


def inbox_routes(*, store: QuestionStore, entry: EntryPoint | None) -> Sequence[BaseRoute]:
    """The routes ``agent-wait inbox serve`` mounts at ``/slack`` (``register_inbox_routes``)."""
    return interactivity_routes(configured_slack(), store, entry=entry)


class _Interactivity:
    """The request handler, with what it answers through."""

    def __init__(
        self,
        slack: SlackAnnounce,
        store: QuestionStore,
        entry: EntryPoint | None,
        verifier: SignatureVerifier,
    ) -> None:
        self.slack = slack
        self.store = store
        self.entry = entry
        self.verifier = verifier

    async def receive(self, request: Request) -> Response:
        body = await request.body()
        if len(body) > _MAX_BODY:
            return PlainTextResponse("request too large", 413)
        if not self._signed(body, request):
            logger.warning("slack: a request with a missing, wrong or old signature was refused")
            return PlainTextResponse("invalid signature", 401)
        try:
            payload = json.loads(parse_qs(body.decode("utf-8"))["payload"][0])
        except (KeyError, IndexError, ValueError):
            return PlainTextResponse("expected a form field 'payload' holding JSON", 400)
        found = _mapping(payload)
        kind = found.get("type")
        if kind == "block_actions":
            # Slack waits three seconds for this reply: the click is acknowledged at once and
            # answered right after, whatever the entry point and the message updates take.
            return Response(status_code=200, background=BackgroundTask(self.clicked, found))
        if kind == "view_submission":
            reply = await run_in_threadpool(self.submitted, found)
            return Response(status_code=200) if reply is None else JSONResponse(reply)
        return Response(status_code=200)  # view_closed, shortcuts...: nothing to do

    def _signed(self, body: bytes, request: Request) -> bool:
        try:
            return self.verifier.is_valid(
                body,
                request.headers.get("x-slack-request-timestamp"),
                request.headers.get("x-slack-signature"),
            )
        except ValueError:  # a timestamp that is not a number
            return False

    def _question(self, reference: Mapping[str, Any]) -> StoredQuestion | None:
        question_id = reference.get("q")
        thread_id = reference.get("t")
        if not isinstance(question_id, str):
            return None
        found = self.store.find(question_id, thread_id if isinstance(thread_id, str) else None)
        return found[0] if len(found) == 1 else None

    def clicked(self, payload: Mapping[str, Any]) -> None:
        """A button: answer with its action, or open the modal that answers."""
        user = slack_user(payload)
        actions = payload.get("actions")
        if not isinstance(actions, list) or not actions:
            return
        action = _mapping(cast("list[Any]", actions)[0])
        action_id = str(action.get("action_id", ""))
        container = _mapping(payload.get("container"))
        channel = str(
            _mapping(payload.get("channel")).get("id") or container.get("channel_id") or ""
        )
        ts = str(container.get("message_ts") or _mapping(payload.get("message")).get("ts") or "")
        try:
            reference = _mapping(json.loads(str(action.get("value"))))
        except ValueError:
            return
        question = self._question(reference)
        if question is None:
            self._tell(channel, user, "This question is no longer with the agent.")
            return
        envelope = question.envelope
        if action_id in (EDIT, DECIDE):
            metadata = {"q": envelope.question_id, "t": envelope.thread_id, "c": channel, "ts": ts}
            text = json.dumps(metadata)
            if len(text) > _MAX_METADATA:
                text = json.dumps({"q": envelope.question_id, "c": channel, "ts": ts})
            view = (edit_modal if action_id == EDIT else decide_modal)(envelope, text)
            try:
                call(
                    self.slack.client,
                    "views.open",
                    trigger_id=str(payload.get("trigger_id")),
                    view=view,
                )
            except SlackApiError as error:
                logger.warning("slack: views.open failed (%s)", error_code(error))
            except OSError as error:
                logger.warning("slack: views.open failed (%s)", type(error).__name__)
            return
        if action_id.startswith(f"{ANSWER}:"):
            value: Any = {"action": action_id.split(":", 1)[1]}
        elif action_id.startswith(f"{ALL}:"):
            value = all_answer(envelope, action_id.split(":", 1)[1])
        else:
            return
        said = self.give(question, value, user, (channel, ts) if channel and ts else None)
        if said is not None:
            self._tell(channel, user, said)

    def submitted(self, payload: Mapping[str, Any]) -> dict[str, Any] | None:
        """A modal's Send: its answer, or the errors Slack shows beside the fields."""
        view = _mapping(payload.get("view"))
        blocks = [_mapping(b) for b in cast("list[Any]", view.get("blocks") or [])]
        inputs = [str(b.get("block_id")) for b in blocks if b.get("type") == "input"]
        first = inputs[0] if inputs else "f:$"
        try:
            metadata = _mapping(json.loads(str(view.get("private_metadata"))))
        except ValueError:
            return _errors({first: "this form is not one the agent sent"})
        question = self._question(metadata)
        if question is None:
            return _errors({first: "This question is no longer with the agent."})
        envelope = question.envelope
        values = _mapping(_mapping(view.get("state")).get("values"))
        try:
            if view.get("callback_id") == DECIDE:
                value: Any = decide_answer(envelope, values)
            else:
                value = edit_answer(envelope, values)
            problem = answer_problem(envelope, value)
        except FieldProblem as error:
            return _errors({error.block_id: str(error)})
        except AgentWaitError as error:
            return _errors({first: str(error)})
        if problem is not None:
            return _errors({_block_of(problem, inputs) or first: problem})
        channel, ts = metadata.get("c"), metadata.get("ts")
        where = (str(channel), str(ts)) if channel and ts else None
        said = self.give(question, value, slack_user(payload), where)
        return None if said is None else _errors({first: said})

    def give(
        self,
        question: StoredQuestion,
        value: Any,
        user: SlackUser,
        where: tuple[str, str] | None,
    ) -> str | None:
        """Answer through core as ``user``; update the messages. What to tell them, if not done.

        The message's line is claimed before the answer is sent: the host that takes the answer
        then finds it and leaves the message as this says (its ``wait.answered`` comes after).
        On a question with a quorum, a vote that does not decide it shows the count and who
        approved so far ("1 of 2 approvals"), with the buttons left for the others; the vote
        that decides it shows who decided and the count.
        """
        envelope = question.envelope
        thread_id, question_id = envelope.thread_id, envelope.question_id
        messages = self.slack.messages
        at = datetime.now(UTC)
        status = answered_status(value, user.mention, at)
        claimed = messages.claim_status(thread_id, question_id, status)
        try:
            result = answer(
                question_id,
                answer=value,
                # Checked against the question's approvers before anything is recorded.
                identity=Identity(subject=user.name, source="slack"),
                thread_id=thread_id,
                store=self.store,
                entry=self.entry,
                at=at,
            )
        except SendUnconfirmed:
            # Kept sending with this answer, sent again until confirmed: the line stays true.
            return (
                "Sent, not confirmed: the agent's entry point did not confirm your answer; it "
                "stays as you gave it and is sent again until it is confirmed."
            )
        except Exception as error:  # noqa: BLE001 - every refusal is told; a failed send is logged
            if claimed:
                messages.release_status(thread_id, question_id, status)
            return self._refusal(question, error, where)
        logger.info(
            "slack: question %s of thread %s answered by %s (Slack user %s, team %s)",
            log_safe(question_id),
            log_safe(thread_id),
            log_safe(user.name),
            log_safe(user.user_id),
            log_safe(user.team_id or "-"),
        )
        if result.message is None:  # a vote that did not reach the quorum: still open
            if claimed:
                messages.release_status(thread_id, question_id, status)
            self._show_votes(result.question, where)
            return None
        votes = votes_status(result.question)
        if votes is not None:  # the deciding vote: who decided, and the count
            status = f"{status}\n{votes}"
        messages.set_status(thread_id, question_id, status)
        self.slack.show(envelope, status, also=where)
        return None

    def _show_votes(self, question: StoredQuestion, where: tuple[str, str] | None) -> None:
        """Show where the votes stand, with the buttons, while the quorum is not reached."""
        envelope = question.envelope
        self.slack.show(envelope, votes_status(question), buttons=True, also=where)
        # A deciding vote may have put its line on the message meanwhile; it must stay last.
        found = self.store.find(envelope.question_id, envelope.thread_id)
        if not found or found[0].is_open:
            return
        closed = found[0]
        posted = self.slack.messages.of(envelope.thread_id, envelope.question_id)
        status = next((m.status for m in posted if m.status), None) or closed_status(
            closed.status, closed.answered_by, closed.answered_at
        )
        self.slack.show(envelope, status, also=where)

    def _refusal(
        self, question: StoredQuestion, error: Exception, where: tuple[str, str] | None
    ) -> str:
        """What to tell the person whose answer was not sent (and, if closed, the message too)."""
        envelope = question.envelope
        if isinstance(error, AlreadyVoted | QuestionDecided):  # still open: the count stays
            return f"Not sent: {error}"
        if isinstance(error, QuestionClosed):
            first = error.question
            posted = self.slack.messages.of(envelope.thread_id, envelope.question_id)
            if not any(m.status for m in posted):  # closed elsewhere: the message says so too
                status = closed_status(first.status, first.answered_by, first.answered_at)
                self.slack.messages.set_status(envelope.thread_id, envelope.question_id, status)
                self.slack.show(envelope, status, also=where)
            return f"Not sent: this question is already {first.describe_close()}."
        if isinstance(error, AnswerNotAccepted):
            return f"Not sent: {error.problem}"
        if isinstance(error, AgentWaitError | ValueError):
            return f"Not sent: {error}"
        logger.error(
            "slack: answer to %s not sent: %s",
            log_safe(envelope.question_id),
            type(error).__name__,
        )
        return f"Not sent: the agent's entry point failed ({type(error).__name__}); try again."

    def _tell(self, channel: str, user: SlackUser, text: str) -> None:
        """A message only ``user`` sees, in the conversation they clicked in."""
        if not channel:
            return
        try:
            call(
                self.slack.client,
                "chat.postEphemeral",
                channel=channel,
                user=user.user_id,
                text=text,
            )
        except SlackApiError as error:
            logger.warning("slack: chat.postEphemeral failed (%s)", error_code(error))
        except OSError as error:
            logger.warning("slack: chat.postEphemeral failed (%s)", type(error).__name__)


def _errors(errors: dict[str, str]) -> dict[str, Any]:
    return {"response_action": "errors", "errors": {k: v[:300] for k, v in errors.items()}}


def _block_of(problem: str, inputs: list[str]) -> str | None:
    """The modal field a core problem names (``answer.args.amount: ...`` is ``f:args.amount``)."""
    found = _PLACE.match(problem)
    if found is None:
        return None
    if found.group("index") is not None:
        block = f"d:{found.group('index')}"
        return block if block in inputs else None
    path = found.group("path") or ""
    while path:
        if f"f:{path}" in inputs:
            return f"f:{path}"
        path = path.rpartition(".")[0]
    return None
