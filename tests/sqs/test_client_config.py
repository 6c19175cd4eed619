"""The clients SqsAnnounce builds: standard retries, an agent-wait User-Agent, the caller's Config on top.

The construction lives in agent-wait-aws (``aws_client_pair``), shared by every AWS announcer; SQS
checks it against the moto server, which records the headers it receives.
"""

from __future__ import annotations

from importlib.metadata import version

import pytest
from botocore.config import Config

from agent_wait.core import ConfigError, apublish, publish
from agent_wait.sqs import SqsAnnounce
from tests.aws_moto import Aws, MotoServer, create_queue, inject_error, questions

USER_AGENT = f"agent-wait/{version('agent-wait-core')}"


def _user_agents(requests: list[dict[str, object]]) -> list[str]:
    agents: list[str] = []
    for request in requests:
        headers = request["headers"]
        assert isinstance(headers, dict)
        agents += [str(v) for k, v in headers.items() if str(k).lower() == "user-agent"]
    return agents


def test_sync_client_retries_in_standard_mode_and_names_agent_wait(
    aws: Aws, moto_server: MotoServer
) -> None:
    url, _ = create_queue(aws.client("sqs"), "approvals")
    with SqsAnnounce(url, **aws.options) as announce, moto_server.recording() as requests:
        assert publish(questions(2), "t-1", announce).ok
        config = announce.clients.sync().meta.config
    assert config.retries == {"mode": "standard"}
    assert config.user_agent_extra == USER_AGENT
    agents = _user_agents(requests)
    assert agents, "moto recorded no request"
    assert all(USER_AGENT in agent for agent in agents), agents


async def test_async_client_retries_in_standard_mode_and_names_agent_wait(
    aws: Aws, moto_server: MotoServer
) -> None:
    url, _ = create_queue(aws.client("sqs"), "approvals")
    announce = SqsAnnounce(url, **aws.options)
    with moto_server.recording() as requests:
        assert (await apublish(questions(2), "t-1", announce)).ok
        client = await announce.clients.async_client()
        assert type(client).__module__.startswith("aiobotocore")
        config = client.meta.config
    await announce.aclose()
    assert config.retries == {"mode": "standard"}
    assert config.user_agent_extra == USER_AGENT
    agents = _user_agents(requests)
    assert agents, "moto recorded no request"
    assert all(USER_AGENT in agent for agent in agents), agents


def test_standard_mode_gives_up_on_throttling_after_three_attempts(aws: Aws) -> None:
    url, _ = create_queue(aws.client("sqs"), "approvals")
    announce = SqsAnnounce(url, **aws.options)
    injected = inject_error(
        announce.clients.sync(), "sqs", "SendMessage", code="ThrottlingException"
    )
    report = publish(questions(1), "t-1", announce)
    assert not report.ok
    assert len(injected) == 3  # botocore's legacy mode would have tried 5 times


def test_a_callers_retries_without_a_mode_keep_standard_mode(aws: Aws) -> None:
    url, _ = create_queue(aws.client("sqs"), "approvals")
    announce = SqsAnnounce(url, **aws.options, config={"retries": {"max_attempts": 1}})
    client = announce.clients.sync()
    # botocore turns max_attempts (retries) into total_max_attempts (attempts)
    assert client.meta.config.retries == {"mode": "standard", "total_max_attempts": 2}
    injected = inject_error(client, "sqs", "SendMessage", code="ThrottlingException")
    assert not publish(questions(1), "t-1", announce).ok
    assert len(injected) == 2  # max_attempts counts retries: the first attempt and one more


@pytest.mark.parametrize(
    "config",
    [
        Config(retries={"mode": "adaptive", "total_max_attempts": 7}, user_agent_extra="billing/2"),
        {"retries": {"mode": "adaptive", "total_max_attempts": 7}, "user_agent_extra": "billing/2"},
    ],
    ids=["Config", "table"],
)
def test_the_callers_config_wins_over_agent_waits(aws: Aws, config: object) -> None:
    url, _ = create_queue(aws.client("sqs"), "approvals")
    with SqsAnnounce(url, **aws.options, config=config) as announce:
        assert publish(questions(1), "t-1", announce).ok
        built = announce.clients.sync().meta.config
    assert built.retries == {"mode": "adaptive", "total_max_attempts": 7}
    assert built.user_agent_extra == "billing/2"


@pytest.mark.parametrize(
    ("config", "fragment"),
    [
        ({"no_such_option": 1}, "no_such_option"),
        ("standard", "'standard'"),
    ],
)
def test_a_config_botocore_refuses_is_a_config_error_naming_it(
    config: object, fragment: str
) -> None:
    url = "https://sqs.us-east-1.amazonaws.com/123456789012/approvals"
    with pytest.raises(ConfigError, match=r"^announcer 'sqs': option 'config': ") as raised:
        SqsAnnounce(url, config=config)
    assert fragment in str(raised.value)
