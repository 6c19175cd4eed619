"""One sans-IO delivery plan, run on a sync or an async SDK client.

An announcer's :meth:`ClientAnnounce.plan` yields the SDK calls that send some envelopes and
receives their results; the runners here do the I/O, so both paths share every decision.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Generator, Sequence
from typing import Any

from agent_wait.core._announce import BaseAnnounce, DeliveryOutcome
from agent_wait.core._clients import ClientPair
from agent_wait.core._models import WaitEnvelope

Exchange = Generator[tuple[str, dict[str, Any]], Any, None]
"""The SDK calls that send some envelopes, without doing I/O: yields ``(method, kwargs)`` and
receives each call's result, or the exception it raised."""


class _NotDelivered(RuntimeError):
    """An envelope the plan neither rejected nor sent: a bug in the announcer, still reported."""


class ClientAnnounce(BaseAnnounce):
    """Base of announcers that deliver through an SDK client with a sync and an async flavour.

    A subclass sets ``self.clients`` (a :class:`ClientPair`) and writes :meth:`plan`. The same
    plan runs on the sync client (:meth:`deliver`, :meth:`deliver_many`) and on the async one
    (:meth:`adeliver`, :meth:`adeliver_many`), so the two paths cannot drift apart. Exchanges run
    one after the other, which keeps FIFO transports in question order, unless the subclass
    sets ``max_concurrency`` above 1: then the async path keeps up to that many exchanges in
    flight, for transports whose requests are independent. When only a sync client was
    injected, the async path runs the sync one in a worker thread.

    Attributes:
        clients: The announcer's clients.
        max_concurrency: Exchanges in flight at once on the async path (default 1: in order).
    """

    clients: ClientPair[Any, Any]
    max_concurrency: int = 1

    def plan(
        self, envelopes: Sequence[WaitEnvelope], outcomes: list[DeliveryOutcome]
    ) -> list[Exchange]:
        """Plan the delivery of ``envelopes``.

        Args:
            envelopes: What to deliver.
            outcomes: One slot per envelope. Put the error of each envelope that cannot be sent
                in its slot now; each returned exchange sets the slots of the envelopes it
                carries (None when delivered) as the responses arrive.

        Returns:
            The exchanges that send the other envelopes, in order.
        """
        raise NotImplementedError(f"{type(self).__name__} must implement plan()")

    def deliver_many(self, envelopes: Sequence[WaitEnvelope]) -> list[DeliveryOutcome]:
        """Deliver several envelopes in as few requests as the transport allows."""
        outcomes: list[DeliveryOutcome] = [_PENDING] * len(envelopes)
        exchanges = self.plan(envelopes, outcomes)
        crashes: list[BaseException | None] = []
        if exchanges:
            client = self.clients.sync()
            crashes = [_run(exchange, client) for exchange in exchanges]
        return _settled(outcomes, crashes, self.clients.classify)

    async def adeliver_many(self, envelopes: Sequence[WaitEnvelope]) -> list[DeliveryOutcome]:
        """Async :meth:`deliver_many`: the async client, never a blocking call on the loop."""
        client = await self.clients.async_client()
        if client is None:
            return await asyncio.to_thread(self.deliver_many, envelopes)
        outcomes: list[DeliveryOutcome] = [_PENDING] * len(envelopes)
        exchanges = self.plan(envelopes, outcomes)
        if self.max_concurrency > 1 and len(exchanges) > 1:
            gate = asyncio.Semaphore(self.max_concurrency)

            async def run(exchange: Exchange) -> BaseException | None:
                async with gate:
                    return await _arun(exchange, client)

            crashes = list(await asyncio.gather(*(run(e) for e in exchanges)))
        else:
            crashes = [await _arun(exchange, client) for exchange in exchanges]
        return _settled(outcomes, crashes, self.clients.classify)

    def close(self) -> None:
        """Close the clients this announcer built (injected ones stay open)."""
        self.clients.close()

    async def aclose(self) -> None:
        """Close the async client this announcer opened on the running loop, then :meth:`close`."""
        await self.clients.aclose()


_PENDING = _NotDelivered("the announcer neither sent nor rejected this envelope")


def _settled(
    outcomes: list[DeliveryOutcome],
    crashes: list[BaseException | None],
    classify: Callable[[BaseException], BaseException],
) -> list[DeliveryOutcome]:
    # Each exchange sets all of its slots unless it crashed, so slots still pending belong to
    # a crashed exchange: they get its error rather than a silent success. The exchanges see
    # the SDK's own exceptions (to recognise a duplicate, say); the report gets them classified.
    crash = next((c for c in crashes if c is not None), _PENDING)
    settled = (crash if outcome is _PENDING else outcome for outcome in outcomes)
    return [classify(o) if isinstance(o, Exception) else o for o in settled]


def _run(exchange: Exchange, client: Any) -> BaseException | None:
    try:
        method, kwargs = next(exchange)
        while True:
            try:
                result: object = getattr(client, method)(**kwargs)
            except Exception as error:  # noqa: BLE001 - the exchange turns it into outcomes
                result = error
            method, kwargs = exchange.send(result)
    except StopIteration:
        return None
    except Exception as error:  # noqa: BLE001 - a broken exchange fails only its own envelopes
        return error


async def _arun(exchange: Exchange, client: Any) -> BaseException | None:
    try:
        method, kwargs = next(exchange)
        while True:
            try:
                result: object = await getattr(client, method)(**kwargs)
            except Exception as error:  # noqa: BLE001 - the exchange turns it into outcomes
                result = error
            method, kwargs = exchange.send(result)
    except StopIteration:
        return None
    except Exception as error:  # noqa: BLE001 - a broken exchange fails only its own envelopes
        return error
