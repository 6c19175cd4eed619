"""boto3 and botocore as an :class:`~agent_wait.aws.AwsSdk`, imported on first use.

Each AWS plugin needs the same SDK pieces; importing them here, only when an announcer is built,
keeps its options model (and ``agent-wait plugins``) free of boto3.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from agent_wait.aws._client import AwsSdk


def _aio_session() -> type[Any]:
    # Imported on the async path's first use: aiobotocore is each plugin's [async] extra.
    from aiobotocore.session import AioSession

    return AioSession


@cache
def boto3_sdk(distribution: str) -> AwsSdk:
    """The boto3/botocore pieces of the announcers of ``distribution``.

    Args:
        distribution: The plugin's distribution (``"agent-wait-sqs"``), named in install hints.

    Raises:
        ImportError: boto3 is not installed; the message names the distribution to install.
    """
    try:
        import boto3
        from botocore.config import Config
        from botocore.exceptions import (
            BotoCoreError,
            ClientError,
            HTTPClientError,
            ProfileNotFound,
        )
        from botocore.exceptions import ConnectionError as BotoConnectionError
    except ImportError as error:  # pragma: no cover - agent-wait-aws depends on boto3
        raise ImportError(f"{distribution} needs boto3: pip install {distribution}") from error
    return AwsSdk(
        boto3.Session,
        _aio_session,
        ProfileNotFound,
        Config,
        distribution,
        client_error=ClientError,
        sdk_error=BotoCoreError,
        connection_errors=(BotoConnectionError, HTTPClientError),
    )
