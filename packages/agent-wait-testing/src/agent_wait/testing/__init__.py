"""Conformance kits for announcers, framework adapters and hosts, entry points and stores (needs pytest).

Subclass :class:`AnnouncerContract` in a test module, name the subclass ``Test…`` and build
your announcer; pytest collects the inherited tests::

    from agent_wait.testing import AnnouncerContract
    from my_transport import MyAnnounce

    class TestMyAnnounce(AnnouncerContract):
        def make_announcer(self):
            return MyAnnounce(url="http://127.0.0.1:8080/hook")

        def received(self, announcer):  # optional: read back what the transport got
            return [json.loads(body) for body in read_all_bodies()]

Override :meth:`AnnouncerContract.make_failing_announcer` to also check that a broken
transport is reported, not raised.

Subclass :class:`AdapterContract` to check a framework package built on
:func:`agent_wait.host.adapter.make_wait` with the framework's real runtime (an offline model)::

    from agent_wait.testing import AdapterContract
    from my_framework_wait import publish_interrupts, questions_in, wait

    class TestMyAdapter(AdapterContract):
        wait = staticmethod(wait)
        questions_in = staticmethod(questions_in)
        publish_interrupts = staticmethod(publish_interrupts)
        hidden_parameter = "ctx"

        def define(self, decorator, body, *, decision): ...  # issue_refund(order_id, amount, ctx)
        def start(self, function, args, thread_id): ...  # a run whose model calls it once
        def resume(self, thread_id, parked, question, answer): ...
        def returned(self, result): ...  # what the caller/model received from the call

Subclass :class:`HostContract` to check a framework's ``handle_message`` (built on
:mod:`agent_wait.host`) through the same kind of real run::

    from agent_wait.testing import HostContract
    from my_framework_wait import ahandle_message, handle_message, wait

    class TestMyHost(HostContract):
        wait = staticmethod(wait)

        def define(self, decorator, body): ...  # issue_refund(order_id, amount, ctx)
        def build(self, function, turns): ...  # the app; its model calls turns[i], one a turn
        def handle(self, app, message, announce, **options): ...  # handle_message(app, ...)
        async def ahandle(self, app, message, announce, **options): ...

Each test's docstring says what a failure means. :class:`EntryContract` (entry points),
:class:`StoreContract` (question stores), :class:`LedgerContract` (execution ledgers) and
:class:`AuditLogContract` (the audit log beside a store) are described in
docs/writing-a-plugin.md. Each kit lives in its own module of this package (``_announcer``,
``_adapter``, ``_host``, ``_entry``, ``_store``, ``_ledger``, ``_audit``); import them from here.
"""

from __future__ import annotations

try:
    import pytest  # noqa: F401  # pyright: ignore[reportUnusedImport] - every kit needs it; this names it when missing
except ImportError as error:  # pragma: no cover - depends on the environment
    raise ImportError("agent_wait.testing needs pytest: pip install pytest") from error

from agent_wait.testing._adapter import AdapterContract
from agent_wait.testing._announcer import AnnouncerContract
from agent_wait.testing._audit import AuditLogContract
from agent_wait.testing._common import registered_plugin, sample_questions
from agent_wait.testing._entry import EntryContract
from agent_wait.testing._host import HostContract
from agent_wait.testing._ledger import LedgerContract
from agent_wait.testing._store import StoreContract

__all__ = [
    "AdapterContract",
    "AnnouncerContract",
    "AuditLogContract",
    "EntryContract",
    "HostContract",
    "LedgerContract",
    "StoreContract",
    "registered_plugin",
    "sample_questions",
]
