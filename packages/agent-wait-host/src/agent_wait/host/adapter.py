"""Building blocks for framework adapters: ``@wait`` and ``publish_interrupts`` over one protocol.

A framework package implements :class:`FrameworkAdapter` (how its runs park, how a parked value
becomes a :class:`~agent_wait.core.Question`, how an answer is checked) and exposes::

    wait = make_wait(adapter)
    publish_interrupts, apublish_interrupts = make_publish_interrupts(adapter)

:func:`wait_payload` is the value a ``@wait`` call parks on (its :data:`PAYLOAD_KEY` entry
carries the policy), :func:`question_from_value` turns a parked value back into a question, and
:func:`apply_answer` runs a call's body with an answer; :func:`edited_args_schema` states
which edited arguments a foreign tool's call takes; :func:`in_doubt_payload` is the in-doubt
question a host asks about an approved call it records itself, and :func:`arun_approved_once`
keeps such a call to one run. :func:`with_asker` fills in who asked (the framework, the agent
and, inside ``share_messages``, :func:`last_messages` of the conversation). The host side
(``handle_message``) is :mod:`agent_wait.host`. Application code does not need this module; see
docs/writing-a-plugin.md ("Writing a framework adapter").
"""

from __future__ import annotations

from agent_wait.host._conversation import last_messages, with_asker
from agent_wait.host._wait import (
    IN_DOUBT_ACTIONS,
    IN_DOUBT_FUNCTION,
    PAYLOAD_KEY,
    FrameworkAdapter,
    WaitCall,
    WaitDecorator,
    apply_answer,
    arun_approved_once,
    edited_args_schema,
    in_doubt_payload,
    make_publish_interrupts,
    make_wait,
    question_from_value,
    wait_payload,
)

__all__ = [
    "IN_DOUBT_ACTIONS",
    "IN_DOUBT_FUNCTION",
    "PAYLOAD_KEY",
    "FrameworkAdapter",
    "WaitCall",
    "WaitDecorator",
    "apply_answer",
    "arun_approved_once",
    "edited_args_schema",
    "in_doubt_payload",
    "last_messages",
    "make_publish_interrupts",
    "make_wait",
    "question_from_value",
    "wait_payload",
    "with_asker",
]
