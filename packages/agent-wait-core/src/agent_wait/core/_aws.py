"""The client pair of an AWS announcer, built from SDK pieces the plugin passes in.

Core imports no AWS SDK; each AWS plugin owns boto3 and aiobotocore and hands them to
:func:`aws_client_pair`, so the option checks and session handling exist once.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Any, Protocol, cast

from agent_wait.core._batching import ClientPair
from agent_wait.core._errors import ConfigError


class _Session(Protocol):
    @property
    def region_name(self) -> str | None: ...

    def client(self, service_name: str, *, endpoint_url: str | None = None) -> Any: ...


class _AioSession(Protocol):
    def create_client(
        self, service_name: str, *, region_name: str | None, endpoint_url: str | None
    ) -> AbstractAsyncContextManager[Any]: ...


@dataclass(frozen=True)
class AwsSdk:
    """The SDK pieces an AWS announcer passes to :func:`aws_client_pair`.

    Attributes:
        session: ``boto3.Session``.
        aio_session: ``aiobotocore.session.AioSession``.
        profile_not_found: ``botocore.exceptions.ProfileNotFound``.
    """

    session: Callable[..., Any]
    aio_session: Callable[..., Any]
    profile_not_found: type[Exception]


def aws_client_pair(
    service: str,
    sdk: AwsSdk,
    *,
    client: Any = None,
    async_client: Any = None,
    endpoint_url: str | None = None,
    region: str | None = None,
    profile: str | None = None,
) -> ClientPair[Any, Any]:
    """Validate the connection options and return the lazily built boto3/aiobotocore pair.

    Raises:
        ConfigError: An option is empty or malformed, the profile does not exist, or no region is
            given or configured (and no client was injected); the message names the option.
    """
    given: dict[str, object] = {"endpoint_url": endpoint_url, "region": region, "profile": profile}
    for option, value in given.items():
        if value is not None and (not isinstance(value, str) or not value.strip()):
            raise ConfigError(f"{option}: expected a non-empty string, got {value!r}")
    if endpoint_url is not None and not endpoint_url.startswith(("http://", "https://")):
        raise ConfigError(f"endpoint_url: expected an http(s) URL, got {endpoint_url!r}")
    try:
        session = cast("_Session", sdk.session(profile_name=profile, region_name=region))
    except sdk.profile_not_found as error:
        raise ConfigError(f"profile: {profile!r} is not in the AWS config files") from error
    if client is None and async_client is None and session.region_name is None:
        raise ConfigError(
            "region: no AWS region given or configured; pass region=... or set AWS_REGION"
        )

    def open_async() -> AbstractAsyncContextManager[Any]:
        aio = cast("_AioSession", sdk.aio_session(profile=profile))
        return aio.create_client(
            service, region_name=session.region_name, endpoint_url=endpoint_url
        )

    return ClientPair(
        lambda: session.client(service, endpoint_url=endpoint_url),
        open_async,
        sync_client=client,
        async_client=async_client,
    )
