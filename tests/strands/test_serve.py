"""serve(): a Strands worker over the embedded entry point, answered with answer()."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from botocore.config import Config
from strands.session.s3_session_manager import S3SessionManager

from agent_wait.core import SqliteEntry
from agent_wait.strands import serve
from tests.aws_moto import Aws
from tests.proxy import Proxy
from tests.serving import check_serve_parks_and_resumes, health_endpoints, probe, until
from tests.strands.conftest import Threads
from tests.strands.fake_model import ScriptedModel
from tests.strands.test_host import REFUND, Tools
from tests.trust_serving import check_serve_runs_only_signed_replies


def test_serve_parks_and_resumes_threads(
    tmp_path: Path, factory: Callable[[ScriptedModel, Sequence[Any]], Threads]
) -> None:
    tools = Tools()
    threads = factory(ScriptedModel([REFUND]), tools.all)
    check_serve_parks_and_resumes(
        lambda entry, announce, stop: serve(
            threads, entry, announce, concurrency=1, wait=0.05, stop=stop
        ),
        tmp_path / "inbox.sqlite3",
        [{"thread_id": f"order-{n}", "input": "refund order-4471"} for n in range(3)],
        lambda: len(tools.runs),
    )
    assert tools.runs == ["refund order-4471 41000"] * 3


def test_serve_with_answer_secrets_runs_only_the_replies_it_signed(
    tmp_path: Path,
    factory: Callable[[ScriptedModel, Sequence[Any]], Threads],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    # The environment configures every host and serve() in the process; the first secret signs.
    monkeypatch.setenv("AGENT_WAIT_ANSWER_SECRETS", f"{'n' * 40},{'o' * 40}")
    tools = Tools()
    threads = factory(ScriptedModel([REFUND]), tools.all)
    check_serve_runs_only_signed_replies(
        lambda entry, announce, stop: serve(
            threads, entry, announce, concurrency=1, wait=0.05, stop=stop
        ),
        tmp_path / "inbox.sqlite3",
        {"thread_id": "order-4471", "input": "refund order-4471"},
        lambda: len(tools.runs),
        caplog,
    )
    assert tools.runs == ["refund order-4471 41000"]


def test_serve_streams_every_run_to_the_stream_callback(
    tmp_path: Path, factory: Callable[[ScriptedModel, Sequence[Any]], Threads]
) -> None:
    tools = Tools()
    threads = factory(ScriptedModel([REFUND]), tools.all)
    events: list[tuple[str, Any]] = []
    check_serve_parks_and_resumes(
        lambda entry, announce, stop: serve(
            threads,
            entry,
            announce,
            concurrency=1,
            wait=0.05,
            stop=stop,
            stream=lambda thread_id, event: events.append((thread_id, event)),
        ),
        tmp_path / "inbox.sqlite3",
        [{"thread_id": "order-9", "input": "refund order-4471"}],
        lambda: len(tools.runs),
    )
    assert {thread for thread, _ in events} == {"order-9"}
    # The start's run stopped on the interrupt, the resume's ran to its end.
    results = [e["result"] for _, e in events if isinstance(e, dict) and "result" in e]
    assert [r.stop_reason for r in results] == ["interrupt", "end_turn"]
    assert any("current_tool_use" in e for _, e in events if isinstance(e, dict))


def test_readyz_reads_the_session_repository_and_names_it_while_storage_is_unreachable(
    tmp_path: Path, factory: Callable[[ScriptedModel, Sequence[Any]], Threads], aws: Aws
) -> None:
    aws.client("s3").create_bucket(Bucket="readiness-sessions")
    with Proxy(urlsplit(aws.url).port or 80) as proxy:
        # Sessions in S3 (moto behind a proxy that can cut it); no message is handled here.
        sessions = S3SessionManager(
            session_id="worker",
            bucket="readiness-sessions",
            boto_session=aws.session,
            boto_client_config=Config(retries={"mode": "standard", "total_max_attempts": 1}),
            endpoint_url=f"http://127.0.0.1:{proxy.port}",
        )
        threads = factory(ScriptedModel([REFUND]), Tools().all)
        entry = SqliteEntry(tmp_path / "inbox.sqlite3", poll_interval=0.02)
        with health_endpoints(
            lambda stop: serve(
                threads,
                entry,
                session_repository=sessions,
                wait=0.05,
                stop=stop,
                health="127.0.0.1:0",
            )
        ) as address:
            until(lambda: probe(address, "/readyz")[0] == 200, "ready")
            proxy.cut()
            code, body = probe(address, "/readyz")
            assert (code, body["status"]) == (503, "unavailable")
            assert list(body["down"]) == ["sessions"]
            proxy.restore()
            until(lambda: probe(address, "/readyz")[0] == 200, "ready again")
