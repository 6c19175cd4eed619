"""The module the ``agent_wait`` entry point names: hooks only, no database library import."""

from __future__ import annotations

from agent_wait.core import hookimpl
from agent_wait.core.hookspecs import RegisterTarget


@hookimpl
def register_announcers(register: RegisterTarget) -> None:
    """Register ``template`` by import path: the announcer module is imported only when used."""
    register("template", "agent_wait.template._announcer:TemplateAnnounce")


@hookimpl
def register_question_stores(register: RegisterTarget) -> None:
    """Register the store of what the ``template`` announcer writes, under the same name."""
    register("template", "agent_wait.template._store:TemplateQuestionStore")
