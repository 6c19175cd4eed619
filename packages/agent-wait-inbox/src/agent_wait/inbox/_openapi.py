"""The inbox JSON API's OpenAPI document (served at ``/api/openapi.json``)."""

from __future__ import annotations

from typing import Any

MAX_LIMIT = 500
"""The most rows one page of ``/api/questions`` holds."""

_QUESTION = {"$ref": "#/components/schemas/StoredQuestion"}
_ID = [
    {"name": "question_id", "in": "path", "required": True, "schema": {"type": "string"}},
    {
        "name": "thread",
        "in": "query",
        "schema": {"type": "string"},
        "description": "The thread, needed only when several threads asked the same id.",
    },
]


def _error(description: str) -> dict[str, Any]:
    return {
        "description": description,
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
    }


_REFUSED = {
    "401": _error("No login, no proxy identity and no bearer token"),
    "403": _error("Refused: the inbox without authentication serves loopback only"),
}
OPENAPI: dict[str, Any] = {
    "openapi": "3.1.0",
    "info": {"title": "agent-wait inbox", "version": "1"},
    "components": {
        "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        "schemas": {
            "StoredQuestion": {
                "type": "object",
                "required": ["status", "answered_at", "answered_by", "answer", "envelope"],
                "properties": {
                    "status": {"enum": ["open", "answered", "expired", "cancelled"]},
                    "answered_at": {"type": ["string", "null"], "format": "date-time"},
                    "answered_by": {"type": ["string", "null"]},
                    "identity_source": {
                        "type": "string",
                        "description": "How answered_by was established (oidc, proxy, cli...); "
                        "present when known.",
                    },
                    "answer": {},
                    "envelope": {"type": "object", "description": "The wait.created envelope."},
                },
            },
            "Error": {
                "type": "object",
                "required": ["error"],
                "properties": {
                    "error": {"type": "string", "description": "What was wrong, naming the field"},
                    "question": _QUESTION,
                    "question_id": {
                        "type": "string",
                        "description": "Several answers: the question of the first problem",
                    },
                    "problems": {
                        "type": "array",
                        "description": "Several answers: one per refused answer, in order",
                        "items": {
                            "type": "object",
                            "required": ["question_id", "error"],
                            "properties": {
                                "question_id": {"type": "string"},
                                "error": {"type": "string"},
                            },
                        },
                    },
                },
            },
        },
    },
    "security": [{"bearer": []}],
    "paths": {
        "/api/questions": {
            "get": {
                "summary": "Open questions, earliest deadline first (status=closed: history)",
                "parameters": [
                    {"name": "status", "in": "query", "schema": {"enum": ["open", "closed"]}},
                    *(
                        {"name": p, "in": "query", "schema": {"type": "string"}}
                        for p in ("tag", "function", "thread", "group", "q", "after")
                    ),
                    {
                        "name": "state",
                        "in": "query",
                        "description": "overdue (open questions past their deadline), or how "
                        "closed ones ended (with status=closed)",
                        "schema": {"enum": ["overdue", "answered", "expired", "cancelled"]},
                    },
                    {
                        "name": "limit",
                        "in": "query",
                        "schema": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT},
                    },
                ],
                "responses": {
                    "200": {
                        "description": "A page",
                        "content": {
                            "application/json": {
                                "schema": {
                                    "type": "object",
                                    "required": ["questions", "next_cursor"],
                                    "properties": {
                                        "questions": {"type": "array", "items": _QUESTION},
                                        "next_cursor": {"type": ["string", "null"]},
                                    },
                                }
                            }
                        },
                    },
                    "400": _error("A malformed parameter (the message names it)"),
                    **_REFUSED,
                },
            }
        },
        "/api/questions/{question_id}": {
            "get": {
                "summary": "One question",
                "parameters": _ID,
                "responses": {
                    "200": {
                        "description": "The question",
                        "content": {"application/json": {"schema": _QUESTION}},
                    },
                    "400": _error("An unknown query parameter (the message names it)"),
                    "404": _error("No such question"),
                    **_REFUSED,
                },
            }
        },
        "/api/questions/{question_id}/answer": {
            "post": {
                "summary": "Answer it (the answer is sent to the agent's entry point)",
                "parameters": _ID,
                "requestBody": {
                    "required": True,
                    "content": {
                        "application/json": {
                            "schema": {
                                "type": "object",
                                "description": "With action: the answer is {action, ...answer}. "
                                "Without: answer is the whole answer, any JSON but null, for a "
                                "question whose code expects its own shape.",
                                "anyOf": [{"required": ["action"]}, {"required": ["answer"]}],
                                "properties": {
                                    "action": {"type": "string"},
                                    "answer": {},
                                },
                            }
                        }
                    },
                },
                "responses": {
                    "200": {
                        "description": "Answered",
                        "content": {"application/json": {"schema": _QUESTION}},
                    },
                    "400": _error(
                        "Action not allowed, answer not matching the question's answer_schema, "
                        "a malformed body or an unknown query parameter"
                    ),
                    "403": _error("A session without the X-CSRF-Token header"),
                    "401": _REFUSED["401"],
                    "404": _error("No such question"),
                    "409": _error("Already answered, expired or cancelled: who, when"),
                    "413": {"description": "Request body too large"},
                    "502": _error("The entry point did not take the answer; try again"),
                },
            }
        },
        "/api/threads/{thread_id}/answers": {
            "post": {
                "summary": "Answer several open questions of one thread in one message (the run "
                "resumes once): all of them are sent, or none",
                "parameters": [
                    {
                        "name": "thread_id",
                        "in": "path",
                        "required": True,
                        "schema": {"type": "string"},
                    }
                ],
                "requestBody": {
                    "required": True,
                    "content": {
                        "application/json": {
                            "schema": {
                                "type": "object",
                                "required": ["answers"],
                                "properties": {
                                    "answers": {
                                        "type": "array",
                                        "minItems": 1,
                                        "description": "In the order to send them: the first is "
                                        "the message's answer, the others its more_answers. Each "
                                        "is a single answer's body plus the question's id.",
                                        "items": {
                                            "type": "object",
                                            "required": ["question_id"],
                                            "anyOf": [
                                                {"required": ["action"]},
                                                {"required": ["answer"]},
                                            ],
                                            "properties": {
                                                "question_id": {"type": "string", "minLength": 1},
                                                "action": {"type": "string", "minLength": 1},
                                                "answer": {},
                                            },
                                        },
                                    }
                                },
                            }
                        }
                    },
                },
                "responses": {
                    "200": {
                        "description": "Every question answered, in one message",
                        "content": {
                            "application/json": {
                                "schema": {
                                    "type": "object",
                                    "required": ["questions"],
                                    "properties": {
                                        "questions": {"type": "array", "items": _QUESTION}
                                    },
                                }
                            }
                        },
                    },
                    "400": _error(
                        "Nothing sent: a malformed body, a question answered twice, or answers "
                        "refused (action not allowed, decisions, edited args, answer_schema): "
                        "problems names each question and field"
                    ),
                    "403": _error("A session without the X-CSRF-Token header"),
                    "401": _REFUSED["401"],
                    "404": _error("Nothing sent: a question id the thread does not have"),
                    "409": _error(
                        "Nothing sent: one of them was already answered, expired or cancelled "
                        "(question: who, when)"
                    ),
                    "413": {"description": "Request body too large"},
                    "502": _error("The entry point did not take the message; try again"),
                },
            }
        },
    },
}
