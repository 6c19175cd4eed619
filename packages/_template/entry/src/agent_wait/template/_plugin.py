"""The module the ``agent_wait`` entry point names: hooks only, no broker library import."""

from __future__ import annotations

from agent_wait.core import hookimpl
from agent_wait.core.hookspecs import RegisterTarget


@hookimpl
def register_entry_points(register: RegisterTarget) -> None:
    """Register ``template`` by import path: the entry point module is imported only when used."""
    register("template", "agent_wait.template._entry:TemplateEntry")
