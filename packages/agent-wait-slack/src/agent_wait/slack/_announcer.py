"""``SlackAnnounce``: each question as a Block Kit message, updated in place as it closes."""

from __future__ import annotations

import logging
from datetime import timedelta
from pathlib import Path

try:
    from slack_sdk import WebClient
    from slack_sdk.errors import SlackApiError
except ImportError as error:  # a broken install: say which distribution brings slack-sdk
    raise ImportError(
        f"agent-wait-slack needs slack-sdk ({error}); reinstall it: pip install agent-wait-slack"
    ) from error

from agent_wait.core import (
    FOLLOW_UP_TYPES,
    BaseAnnounce,
    DeliveryFailed,
    LifecycleEvent,
    Receipt,
    WaitEnvelope,
    log_safe,
)
from agent_wait.slack._api import TRANSIENT, call, error_code, failure
from agent_wait.slack._blocks import (
    event_status,
    fallback_text,
    follow_up_text,
    question_blocks,
)
from agent_wait.slack._messages import PostedMessage, PostedMessages, default_messages_path
from agent_wait.slack._options import SlackOptions

logger = logging.getLogger(__name__)


class SlackAnnounce(BaseAnnounce):
    """Post each question to Slack as a Block Kit message its approvers answer with a click.

    The message names the function, shows its arguments as fields, the deadline (in each
    reader's time zone) and the default applied when nobody answers, with one button per
    allowed action (**Approve**, **Reject**...) and **Edit...**, which opens a modal built from
    the question's ``answer_schema``. A LangChain middleware batch shows each action, with
    **Approve all** / **Reject all** when every action allows it and **Decide each...**, a
    modal taking one decision per action. The clicks come back to :func:`interactivity_app`
    (``agent-wait slack serve``, or ``/slack/interactivity`` of ``agent-wait inbox serve``).

    Destinations are ``channel`` plus, for each tag of the question, the ``routes`` entry
    ``"<tag>:<value>"``; a user ID posts a direct message from the app. Where each message was
    posted is recorded in ``messages_path`` so that it is updated in place: opted in to
    lifecycle events (``with_lifecycle_events``), "Expired: default reject applied", "The agent
    refused this answer: ..." (with the buttons back) and "Answered by ..." for an answer given
    elsewhere. A question already posted to a destination is not posted there again (a
    redelivered publish).

    Opted in to the sweeper's follow-ups (``wait.reminder``, ``wait.escalated``,
    ``wait.last_warning``), it replies in each message's thread, mentioning the ``mentions`` of
    the question's tags; an escalation posts the question to the ``routes`` of its
    ``escalate.to`` tags too and mentions theirs.

    A question with no destination fails its delivery (not retryable), as does one Slack
    refuses for any destination; the error names how many failed and Slack's error codes
    (``channel_not_found``, ``not_in_channel``, ``ratelimited``), never the token.

    Args:
        token: The app's bot token (``xoxb-...``).
        token_env: Name of an environment variable holding ``token``, read now.
        channel: Where every question goes: ``C0123ABCD``, ``#approvals`` or ``U0123ABCD``.
        routes: Destinations by ``"<tag>:<value>"``.
        mentions: Whom follow-ups mention, by ``"<tag>:<value>"``: user IDs (``U0123ABCD``)
            and user group IDs (``S0123ABCD``).
        signing_secret: The app's signing secret, for :func:`interactivity_app`.
        signing_secret_env: Name of an environment variable holding ``signing_secret``.
        base_url: The Web API's root (default ``https://slack.com/api/``).
        messages_path: The sqlite file recording the posted messages (default:
            ``$AGENT_WAIT_HOME/slack-messages.sqlite3``).
        timeout: Bound on each Web API call.

    Raises:
        ConfigError: An option is invalid or an ``_env`` variable is unset; the message names
            the option (never the token or the secret).
    """

    name = "slack"
    options_model = SlackOptions

    def __init__(
        self,
        token: str | None = None,
        *,
        token_env: str | None = None,
        channel: str | None = None,
        routes: dict[str, list[str] | str] | None = None,
        mentions: dict[str, list[str] | str] | None = None,
        signing_secret: str | None = None,
        signing_secret_env: str | None = None,
        base_url: str = "https://slack.com/api/",
        messages_path: str | Path | None = None,
        timeout: float | timedelta | str = 30.0,
    ) -> None:
        options = SlackOptions.parse(
            self.name,
            {
                "token": token,
                "token_env": token_env,
                "channel": channel,
                "routes": routes or {},
                "mentions": mentions or {},
                "signing_secret": signing_secret,
                "signing_secret_env": signing_secret_env,
                "base_url": base_url,
                "messages_path": None if messages_path is None else str(messages_path),
                "timeout": timeout,
            },
        )
        self._options = options
        self.client = WebClient(
            token=options.token.get_secret_value(),
            base_url=options.base_url,
            timeout=max(1, round(options.timeout)),
        )
        """The slack-sdk client, with the bot token (for the interactivity app's calls)."""
        self.messages = PostedMessages(
            Path(options.messages_path)
            if options.messages_path is not None
            else default_messages_path()
        )
        """Where each question was posted."""

    @property
    def signing_secret(self) -> str | None:
        """The app's signing secret, when configured."""
        secret = self._options.signing_secret
        return None if secret is None else secret.get_secret_value()

    @property
    def destination(self) -> str | None:
        """The Web API's root."""
        return self._options.base_url

    def destinations(self, envelope: WaitEnvelope) -> list[str]:
        """``channel`` and the ``routes`` of the question's tags, each once, in order."""
        found = [self._options.channel] if self._options.channel else []
        for key, value in envelope.tags.items():
            found.extend(self._options.routes.get(f"{key}:{value}", []))
        return list(dict.fromkeys(found))

    def deliver(self, envelope: WaitEnvelope) -> Receipt:
        """Post the question to every destination; raise DeliveryFailed when any refused it."""
        destinations = self.destinations(envelope)
        if not destinations:
            raise DeliveryFailed(
                "no Slack destination for this question: set 'channel', or a 'routes' entry "
                "for one of its tags "
                f"({', '.join(f'{k}:{v}' for k, v in envelope.tags.items()) or 'it has none'})",
                retryable=False,
            )
        failures, retryable, first = self._post(envelope, destinations)
        if failures:
            raise DeliveryFailed(
                f"{len(failures)} of {len(destinations)} Slack destinations not reached "
                f"({', '.join(sorted(set(failures)))})",
                retryable=retryable,
                attempts=1,
            )
        logger.debug("slack: question posted to %d destinations", len(destinations))
        return Receipt(message_id=first, attempts=1)

    def _post(
        self, envelope: WaitEnvelope, destinations: list[str]
    ) -> tuple[list[str], bool, str | None]:
        """Post the question where it is not yet.

        Returns Slack's codes of the posts that failed, whether any is transient, and the
        first message posted (``channel/ts``).
        """
        posted = {m.destination for m in self.messages.of(envelope.thread_id, envelope.question_id)}
        failures: list[str] = []
        retryable = False
        first: str | None = None
        for destination in destinations:
            if destination in posted:
                continue
            try:
                response = call(
                    self.client,
                    "chat.postMessage",
                    channel=destination,
                    text=fallback_text(envelope),
                    blocks=question_blocks(envelope),
                    unfurl_links=False,
                    unfurl_media=False,
                )
            except (SlackApiError, OSError) as error:  # OSError: urllib's URLError, a timeout
                code, transient = failure(error)
                failures.append(code)
                retryable = retryable or transient
                continue
            channel, ts = str(response["channel"]), str(response["ts"])
            # Recorded under the ID Slack answers with: a #name or a user's DM becomes C.../D....
            self.messages.record(envelope, destination, channel, ts)
            posted.add(destination)
            first = first or f"{channel}/{ts}"
        return failures, retryable, first

    def show(
        self,
        envelope: WaitEnvelope,
        status: str | None,
        *,
        buttons: bool = False,
        also: tuple[str, str] | None = None,
    ) -> list[str]:
        """Update every message of the question in place: its status line, with or without buttons.

        ``also`` is a (channel, ts) message to update even if it was not recorded (the one
        clicked, posted by a process that kept its record elsewhere). Returns Slack's error
        codes of the updates that failed (logged, never raised: the answer stands).
        """
        targets = {
            (m.channel, m.ts) for m in self.messages.of(envelope.thread_id, envelope.question_id)
        }
        if also is not None:
            targets.add(also)
        return self._update(sorted(targets), envelope, status, buttons)

    def _update(
        self,
        targets: list[tuple[str, str]],
        envelope: WaitEnvelope,
        status: str | None,
        buttons: bool,
    ) -> list[str]:
        failed: list[str] = []
        blocks = question_blocks(envelope, status, buttons=buttons)
        for channel, ts in targets:
            try:
                call(
                    self.client,
                    "chat.update",
                    channel=channel,
                    ts=ts,
                    text=fallback_text(envelope),
                    blocks=blocks,
                )
            except SlackApiError as error:
                failed.append(error_code(error))
            except OSError as error:
                failed.append(type(error).__name__)
        if failed:
            logger.warning(
                "slack: %d of %d messages of a question not updated (%s)",
                len(failed),
                len(targets),
                ", ".join(sorted(set(failed))),
            )
        return failed

    def deliver_event(self, event: LifecycleEvent) -> Receipt | None:
        """Update the question's messages, or reply in their threads with a follow-up.

        Expired, answered elsewhere or answer refused update the messages; a reminder, an
        escalation or the last warning replies in their threads. A refused answer puts the buttons back (the question is open again). A question this
        announcer never posted has nothing to update. A follow-up is a reply in the thread of
        each of the question's messages, mentioning the ``mentions`` of its tags; an escalation
        first posts the question to the ``routes`` of its ``escalate.to`` tags, and mentions
        theirs. A follow-up delivered again (the sweeper tries a failed one again) replies only
        in the threads it did not reach.

        Raises:
            DeliveryFailed: Slack refused an update or a reply (its error codes, retryable when
                they are).
        """
        if event.type in FOLLOW_UP_TYPES:
            return self._follow_up(event)
        posted: list[PostedMessage] = self.messages.of(event.thread_id, event.question_id)
        if not posted:
            return None
        envelope = posted[0].envelope
        if event.type == "wait.answered" and posted[0].status is not None:
            return None  # the message already says who closed it, and how
        status = event_status(event.type, event.by, event.at, envelope.default, event.reason)
        refused = event.type == "wait.answer_refused"
        failed = self._update(
            sorted((m.channel, m.ts) for m in posted),
            envelope,
            status,
            buttons=refused,
        )
        if not failed:
            # A refused answer opens the question again: the next answer's line replaces it.
            self.messages.set_status(
                event.thread_id, event.question_id, None if refused else status
            )
        else:
            raise DeliveryFailed(
                f"{len(failed)} of {len(posted)} Slack messages not updated "
                f"({', '.join(sorted(set(failed)))})",
                retryable=any(
                    code in TRANSIENT or code == "URLError" or code.startswith("HTTP 5")
                    for code in failed
                ),
                attempts=1,
            )
        return Receipt(attempts=1)

    def _escalated_to(self, event: LifecycleEvent, envelope: WaitEnvelope) -> dict[str, str]:
        """The escalation's tags once the question escalated (at ``event``), else none."""
        if event.escalated_to is not None:
            return event.escalated_to
        follow_up = envelope.follow_up
        if (
            follow_up is None
            or follow_up.escalate_at is None
            or follow_up.escalate_to is None
            or follow_up.escalate_at > event.at
        ):
            return {}
        return follow_up.escalate_to

    def _follow_up(self, event: LifecycleEvent) -> Receipt | None:
        posted = self.messages.of(event.thread_id, event.question_id)
        envelope = event.envelope or (posted[0].envelope if posted else None)
        if envelope is None:
            return None
        escalated = self._escalated_to(event, envelope)
        options = self._options
        # Where the question goes now: its destinations, and the escalation's; any it did not
        # reach yet (an earlier post failed, or the escalation widened it) get the question.
        destinations = list(
            dict.fromkeys([*self.destinations(envelope), *_by_tags(options.routes, escalated)])
        )
        failures, retryable, _ = self._post(envelope, destinations)
        unposted = len(failures)
        # An escalation calls on its new approvers; a reminder or last call on everyone's.
        mentions = _by_tags(options.mentions, escalated)
        if event.type != "wait.escalated":
            asked = _by_tags(options.mentions, envelope.tags)
            mentions = list(dict.fromkeys([*asked, *mentions]))
        text = follow_up_text(event, envelope, mentions)
        key = event.dedupe_key
        done = self.messages.replied(key)
        threads = sorted(
            (m.channel, m.ts) for m in self.messages.of(event.thread_id, event.question_id)
        )
        for channel, ts in threads:
            if (channel, ts) in done:
                continue
            try:
                response = call(
                    self.client,
                    "chat.postMessage",
                    channel=channel,
                    thread_ts=ts,
                    text=text,
                    unfurl_links=False,
                    unfurl_media=False,
                )
            except (SlackApiError, OSError) as error:  # OSError: urllib's URLError, a timeout
                code, transient = failure(error)
                failures.append(code)
                retryable = retryable or transient
                continue
            self.messages.record_reply(key, channel, ts, str(response["ts"]))
        if failures:
            # Of the posts of the question tried, and the replies tried.
            total = unposted + len([t for t in threads if t not in done])
            causes = ", ".join(sorted(set(failures)))
            logger.warning(
                "slack: %s of question %s not delivered to %d of %d conversations (%s)",
                event.type,
                log_safe(event.question_id),
                len(failures),
                total,
                causes,
            )
            raise DeliveryFailed(
                f"{event.type} not delivered to {len(failures)} of {total} Slack conversations "
                f"({causes})",
                retryable=retryable,
                attempts=1,
            )
        return Receipt(attempts=1)

    def check_connection(self) -> bool:
        """``auth.test``: the token is valid and the Web API reachable."""
        call(self.client, "auth.test")
        return True

    def close(self) -> None:
        """Close the record of posted messages."""
        self.messages.close()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r} {self.destination}>"


def _by_tags(table: dict[str, list[str]], tags: dict[str, str]) -> list[str]:
    """The entries of ``table`` (``routes``, ``mentions``) for ``tags``, each once, in order."""
    found = [item for key, value in tags.items() for item in table.get(f"{key}:{value}", [])]
    return list(dict.fromkeys(found))
