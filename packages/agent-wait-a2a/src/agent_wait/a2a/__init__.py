"""A2A bridge for agent-wait.

Server side: :func:`a2a_app` serves an agent-wait host (any framework's ``ahandle_message``) as
an A2A agent whose parked runs are tasks in ``input-required``; :class:`WaitExecutor` is the
SDK executor behind it. Client side: :func:`publish_task` turns a remote agent's
``input-required`` task into an agent-wait question, :func:`answer_task` sends its answer as
the follow-up message on that task.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent_wait.core import lazy_exports

if TYPE_CHECKING:
    from agent_wait.a2a._app import a2a_app, agent_card
    from agent_wait.a2a._client import answer_task, publish_task, question_of_task
    from agent_wait.a2a._errors import NotWaitingForInput
    from agent_wait.a2a._server import QUESTION_MEDIA_TYPE, HandleMessage, WaitExecutor

__all__ = [
    "QUESTION_MEDIA_TYPE",
    "HandleMessage",
    "NotWaitingForInput",
    "WaitExecutor",
    "a2a_app",
    "agent_card",
    "answer_task",
    "publish_task",
    "question_of_task",
]

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "a2a_app": "._app",
        "agent_card": "._app",
        "NotWaitingForInput": "._errors",
        "answer_task": "._client",
        "publish_task": "._client",
        "question_of_task": "._client",
        "QUESTION_MEDIA_TYPE": "._server",
        "HandleMessage": "._server",
        "WaitExecutor": "._server",
    },
)
