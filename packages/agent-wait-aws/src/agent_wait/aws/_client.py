"""The client pair of an AWS announcer: option checks, client configuration, sessions.

The SDK pieces come in an :class:`AwsSdk` (see :func:`agent_wait.aws.boto3_sdk`), so this
module imports no SDK and the options of an AWS announcer load without boto3.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from typing import Annotated, Any, Protocol, cast

from pydantic import AfterValidator, Field
from pydantic.json_schema import SkipJsonSchema

from agent_wait.aws._errors import RETRYABLE_CODES
from agent_wait.core import ConfigError, DeliveryFailed, Receipt
from agent_wait.core.options import AnnouncerOptions, Text
from agent_wait.core.transport import ClientPair


def _http_url(value: str) -> str:
    if not value.startswith(("http://", "https://")) or any(c.isspace() for c in value):
        raise ValueError("expected an http(s) URL")
    return value


class AwsOptions(AnnouncerOptions):
    """The connection options every AWS announcer's options model inherits.

    ``client`` and ``async_client`` take SDK objects, so only Python code passes them; they
    are left out of the JSON Schema.
    """

    client: SkipJsonSchema[Any] = Field(default=None, exclude=True)
    """A boto3 client to use (and not close) instead of building one."""
    async_client: SkipJsonSchema[Any] = Field(default=None, exclude=True)
    """An aiobotocore client to use (and not close) on the async path."""
    endpoint_url: Annotated[str, AfterValidator(_http_url)] | None = None
    """Endpoint of the built clients (LocalStack, moto, a VPC endpoint)."""
    region: Text | None = None
    """Region of the built clients."""
    profile: Text | None = None
    """AWS config profile of the built clients."""
    config: Any = None
    """botocore Config of the built clients: a table of its options (``retries``,
    ``connect_timeout``, ...) or, from Python, a ``botocore.config.Config``; merged over
    agent-wait's (standard retries, an ``agent-wait`` User-Agent)."""


RETRY_MODE = "standard"
"""botocore retry mode of the clients agent-wait builds (botocore's own default is ``legacy``)."""


class _Session(Protocol):
    @property
    def region_name(self) -> str | None: ...

    def client(
        self, service_name: str, *, endpoint_url: str | None = None, config: Any = None
    ) -> Any: ...


class _AioSession(Protocol):
    def create_client(
        self, service_name: str, *, region_name: str | None, endpoint_url: str | None, config: Any
    ) -> AbstractAsyncContextManager[Any]: ...


class _Config(Protocol):
    def merge(self, other_config: Any) -> _Config: ...


@dataclass(frozen=True)
class AwsSdk:
    """The SDK pieces an AWS announcer passes to :func:`aws_client_pair`.

    Attributes:
        session: ``boto3.Session``.
        aio_session: Returns ``aiobotocore.session.AioSession``, importing it only when the async
            path first needs a client; an ImportError becomes an install hint naming the extra.
        profile_not_found: ``botocore.exceptions.ProfileNotFound``.
        config: ``botocore.config.Config``.
        distribution: The plugin's distribution (``agent-wait-sqs``), named in the install hint.
        client_error: ``botocore.exceptions.ClientError``: the service answered with an error.
        sdk_error: ``botocore.exceptions.BotoCoreError``: the SDK failed before an answer.
        connection_errors: The ``BotoCoreError`` subclasses worth retrying (connection errors
            and timeouts: ``botocore.exceptions.ConnectionError`` and ``HTTPClientError``).
    """

    session: Callable[..., Any]
    aio_session: Callable[[], Callable[..., Any]]
    profile_not_found: type[Exception]
    config: Callable[..., Any]
    distribution: str
    client_error: type[Exception] | None = None
    sdk_error: type[Exception] | None = None
    connection_errors: tuple[type[Exception], ...] = ()

    def classify(self, service: str, error: BaseException) -> BaseException:
        """The :class:`DeliveryFailed` of an SDK exception; any other exception unchanged.

        A service error is retryable when its HTTP status is 5xx or 429 or its code is a
        throttling or server-fault code; an SDK error when it is a connection error or timeout.
        """
        if self.client_error is not None and isinstance(error, self.client_error):
            response = cast("dict[str, Any]", getattr(error, "response", None) or {})
            code = str(response.get("Error", {}).get("Code") or "") or None
            status = response.get("ResponseMetadata", {}).get("HTTPStatusCode")
            retryable = code in RETRYABLE_CODES or (
                isinstance(status, int) and (status >= 500 or status == 429)
            )
            failed = DeliveryFailed(
                f"{service}: {type(error).__name__}: {error}",
                retryable=retryable,
                code=code or (str(status) if status else None),
                attempts=_attempts(response),
            )
        elif self.sdk_error is not None and isinstance(error, self.sdk_error):
            failed = DeliveryFailed(
                f"{service}: {type(error).__name__}: {error}",
                retryable=isinstance(error, self.connection_errors),
                code=type(error).__name__,
            )
        else:
            return error
        failed.__cause__ = error
        return failed


def user_agent_extra() -> str:
    """The User-Agent suffix of agent-wait's AWS clients: ``agent-wait/<core version>``."""
    try:
        return f"agent-wait/{version('agent-wait-core')}"
    except PackageNotFoundError:  # a source checkout that was never installed
        return "agent-wait/unknown"


def client_config(sdk: AwsSdk, config: Any = None) -> Any:
    """agent-wait's botocore Config (standard retries, User-Agent suffix), ``config`` merged over it.

    Args:
        sdk: The plugin's SDK pieces.
        config: None, a ``botocore.config.Config``, or a mapping of its keyword arguments (what a
            TOML table gives); its values win over agent-wait's.

    Raises:
        ConfigError: ``config`` is neither, or the mapping has an option Config refuses.
    """
    ours = cast(
        "_Config",
        sdk.config(retries={"mode": RETRY_MODE}, user_agent_extra=user_agent_extra()),
    )
    if config is None:
        return ours
    if isinstance(config, Mapping):
        options = dict(cast("Mapping[str, Any]", config))
        try:
            config = sdk.config(**options)
        except (TypeError, ValueError) as error:
            raise ConfigError(f"config: botocore's Config refused the table: {error}") from error
    elif not isinstance(config, cast("type", sdk.config)):
        raise ConfigError(
            f"config: expected a botocore.config.Config or a table of its options, got {config!r}"
        )
    merged = ours.merge(config)
    # merge() replaces the retries table whole: a caller's {"max_attempts": 10} keeps our mode.
    retries = cast("dict[str, Any] | None", getattr(merged, "retries", None))
    if retries is not None and "mode" not in retries:
        merged = merged.merge(sdk.config(retries={"mode": RETRY_MODE, **retries}))
    return merged


def aws_receipt(
    response: object, message_id: str | None = None, *, notes: tuple[str, ...] = ()
) -> Receipt:
    """The :class:`Receipt` of a successful AWS call: the message id and the SDK's attempts.

    ``notes`` (what was changed for the service to take the message) are passed through.
    """
    metadata = cast("dict[str, Any]", response) if isinstance(response, dict) else {}
    return Receipt(message_id, _attempts(metadata), notes)


def _attempts(response: dict[str, Any]) -> int | None:
    retries = response.get("ResponseMetadata", {}).get("RetryAttempts")
    return retries + 1 if isinstance(retries, int) else None


def aws_client_pair(
    service: str, sdk: AwsSdk, options: AwsOptions, *, name: str
) -> ClientPair[Any, Any]:
    """Return the lazily built boto3/aiobotocore pair of validated :class:`AwsOptions`.

    The built clients use botocore's ``standard`` retry mode and add ``agent-wait/<version>`` to
    the User-Agent; the ``config`` option (see :func:`client_config`) is merged over that.
    Injected clients are used as they are.

    Args:
        service: The boto3 service name (``"sqs"``).
        sdk: The plugin's SDK pieces.
        options: The announcer's validated options.
        name: The announcer's name, for messages.

    Raises:
        ConfigError: ``config`` is refused, the profile does not exist, or no region is given or
            configured (and no client was injected); the message names the option.
        ImportError: (from the async path, on first use) aiobotocore is not installed; the
            message names the ``[async]`` extra to install.
    """
    profile, region, endpoint_url = options.profile, options.region, options.endpoint_url
    try:
        built_config = client_config(sdk, options.config)
    except ConfigError as error:
        why = str(error).removeprefix("config: ")
        raise AwsOptions.option_error(name, "config", why, options.config) from error
    try:
        session = cast("_Session", sdk.session(profile_name=profile, region_name=region))
    except sdk.profile_not_found as error:
        raise AwsOptions.option_error(
            name, "profile", "not in the AWS config files", profile
        ) from error
    if options.client is None and options.async_client is None and session.region_name is None:
        raise AwsOptions.option_error(
            name, "region", "no AWS region given or configured; set it or AWS_REGION", region
        )

    def open_async() -> AbstractAsyncContextManager[Any]:
        try:
            aio_session = sdk.aio_session()
        except ImportError as error:
            raise ImportError(
                f"the async path (apublish) of {sdk.distribution} needs aiobotocore: "
                f"pip install '{sdk.distribution}[async]'"
            ) from error
        aio = cast("_AioSession", aio_session(profile=profile))
        return aio.create_client(
            service,
            region_name=session.region_name,
            endpoint_url=endpoint_url,
            config=built_config,
        )

    return ClientPair(
        lambda: session.client(service, endpoint_url=endpoint_url, config=built_config),
        open_async,
        sync_client=options.client,
        async_client=options.async_client,
        classify=lambda error: sdk.classify(service, error),
    )
