"""The benchmark script's pieces run (tiny sizes). No timing is asserted: speed targets live in
``nox -s bench`` (tests/bench/run.py), never in the test suite."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest

from agent_wait.core import PublishReport
from tests.bench import coldstart, latency, scale_out
from tests.bench import run as bench


def test_cpu_subjects_produce_what_they_compare() -> None:
    envelope = bench.envelope_subjects()
    ours, plain = (subject() for subject in envelope.values())
    assert isinstance(ours, bytes)
    assert isinstance(plain, str)
    assert json.loads(ours).keys() == json.loads(plain).keys()

    subjects, adapter = bench.wait_subjects()
    assert [subject() for subject in subjects.values()] == ["order-1", "order-1"]
    assert adapter.framework_calls == 0

    published, built = (subject() for subject in bench.publish_subjects().values())
    assert isinstance(published, PublishReport)
    assert published.ok
    assert len(published.deliveries) == 1
    assert isinstance(built, bytes)


def test_interleaved_takes_one_sample_per_round() -> None:
    calls: list[str] = []
    samples = bench.interleaved(
        {"a": lambda: calls.append("a"), "b": lambda: calls.append("b")}, 3, 4
    )
    assert {name: len(values) for name, values in samples.items()} == {"a": 3, "b": 3}
    assert calls.count("a") == calls.count("b") == 3 * 4 + 1  # rounds x calls + warm-up
    assert all(value >= 0 for values in samples.values() for value in values)


def test_minimal_wrapper_binds_and_asks() -> None:
    wrapper = bench.minimal_wrapper(bench.issue_refund, bench.large_amount)
    assert wrapper("order-1", amount=5) == "order-1"
    with pytest.raises(bench._Asked):
        wrapper("order-1", 5000)
    with pytest.raises(TypeError):
        wrapper("order-1")


@pytest.mark.parametrize("name", ["envelope", "publish", "wait", "sqlite", "inbox", "votes"])
def test_in_process_benchmarks_report(name: str) -> None:
    result = bench.BENCHMARKS[name](bench.QUICK)
    assert result.ratio is not None
    assert result.ratio > 0
    assert result.raw
    if name == "inbox":
        assert set(result.raw["seconds"]) == {"p1", "p1_query", "pN", "pN_query"}
        assert set(result.raw["cpu_seconds"]) == set(result.raw["seconds"])
    if name == "sqlite":
        peaks = result.raw["peak_bytes"]
        assert peaks[str(bench.QUICK.sqlite_memory_n)] > peaks["one"] > 0


async def test_delay_proxy_holds_requests_and_passes_answers() -> None:
    async def echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while data := await reader.read(100):
            writer.write(data.upper())
            await writer.drain()
        writer.close()

    upstream = await asyncio.start_server(echo, "127.0.0.1", 0)
    port = upstream.sockets[0].getsockname()[1]
    proxy, url = await bench.delay_proxy(f"http://127.0.0.1:{port}", 0.05)
    reader, writer = await asyncio.open_connection(*url.removeprefix("http://").split(":"))
    start = time.perf_counter()
    writer.write(b"ping")
    assert await reader.read(100) == b"PING"
    assert time.perf_counter() - start >= 0.05
    writer.close()
    proxy.close()
    upstream.close()


@pytest.mark.integration
def test_dynamodb_puts_run_on_moto_behind_the_proxy() -> None:
    result = bench.bench_dynamodb_puts(bench.QUICK, delay=0.005)
    assert result.passed is not None, result.note
    assert set(result.raw["seconds"]) == {"concurrent", "one_at_a_time"}


def test_inbox_roundtrip_resumes_a_real_graph() -> None:
    result = bench.bench_inbox_roundtrip(bench.QUICK)
    assert isinstance(result.passed, bool), result.summary  # measured, whatever the time
    seconds = result.raw["round_trip_seconds"]
    assert seconds["max"] >= seconds["min"] > result.raw["click_seconds"]["min"] > 0


@pytest.mark.integration
def test_answer_latency_resumes_parked_runs_on_each_entry_point() -> None:
    result = bench.bench_answer_latency(bench.QUICK)
    rows = {row["entry"]: row for row in result.rows}
    assert set(rows) == set(latency.MAKERS)
    assert rows["sqlite"]["answers"] == 3
    assert rows["sqlite"]["idle_polls_per_second"] > 0
    for row in rows.values():
        if row["passed"] is not None:
            assert row["max_seconds"] >= row["p95_seconds"] >= row["p50_seconds"] > 0
            assert row["answer_call_p50_seconds"] > 0
    assert all(f"| &nbsp;&nbsp;{name} |" in bench.table([result]) for name in rows)


def test_cold_start_splits_the_process_and_lists_what_only_agent_wait_loads() -> None:
    processes = {"langgraph": bench.HOST_PROCESSES["langgraph"]}
    result = bench.Result(**coldstart.cold_start(processes, 1, bench._clean_env()))
    [row] = result.rows
    assert row["extra_modules"] == []  # the graph's host loads nothing the plain host does not
    for side in ("agent-wait", "plain"):
        assert row["wall_seconds"][side] > row["setup_seconds"][side] > 0
        assert row["first_call_seconds"][side] > 0
    assert "| &nbsp;&nbsp;langgraph |" in bench.table([result])
    with pytest.raises(ValueError, match="inbox = MemoryAnnounce"):
        coldstart.timed("print('no host part')")


def test_import_probe_lists_no_sdk() -> None:
    result = bench.bench_import(bench.QUICK)
    assert result.raw["forbidden_modules_loaded"] == []
    assert set(result.raw["seconds"]) >= {"import pydantic", "import agent_wait.core"}


@pytest.mark.integration
def test_fanout_reaches_three_receivers() -> None:
    result = bench.bench_fanout(bench.QUICK, delay=0.01)
    assert result.passed is not None, result.note  # measured, not skipped
    assert set(result.raw["seconds"]) == {"apublish", "publish"}
    assert result.raw["seconds"]["apublish"]["min"] > 0


@pytest.mark.integration
def test_aws_counts_requests_on_moto() -> None:
    result = bench.bench_aws(bench.QUICK)
    measured = [row for row in result.rows if "requests" in row]
    assert measured, result.note
    for row in measured:
        assert row["requests_one_at_a_time"] >= row["requests"] >= 1
        assert row["budget"] >= 1


def test_main_writes_results_json(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # main() turns plugin autoload off for the process; let monkeypatch undo that afterwards.
    monkeypatch.setenv("AGENT_WAIT_DISABLE_PLUGIN_AUTOLOAD", "0")
    output = tmp_path / "results.json"
    code = bench.main(["--quick", "--only", "envelope,wait", "--no-fail", "--output", str(output)])
    assert code == 0
    document = json.loads(output.read_text())
    assert set(document["benchmarks"]) == {"envelope", "wait"}
    assert document["machine"]["cpus"] >= 1
    for entry in document["benchmarks"].values():
        assert {"ratio", "target", "passed", "raw"} <= set(entry)


@pytest.mark.parametrize("framework", sorted(bench.FRAMEWORK_SIDES))
def test_thread_sides_decide_late_and_unknown_answers_and_resume(framework: str) -> None:
    # Each subject asserts its own outcome (duplicate, unknown_question) when called.
    sides = bench.FRAMEWORK_SIDES[framework]((2, 6))
    assert sorted(sides.late) == sorted(sides.unknown) == [2, 6]
    for calls in (sides.late, sides.unknown):
        for call in calls.values():
            assert call() is not None
    handled = sides.park("handle_message")()
    assert getattr(handled, "outcome", None) == "resumed"
    assert sides.park("framework")() is not None


@pytest.mark.parametrize("framework", sorted(bench.FRAMEWORK_SIDES))
def test_the_frameworks_own_resume_keeps_no_execution_record(
    framework: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The framework's own side measures the framework alone: no agent-wait plugin, hook or
    # guard the host installed on a shared agent or runner records its approved call.
    from agent_wait.core import SqliteLedger, configured_ledger

    monkeypatch.delenv("AGENT_WAIT_ANNOUNCE", raising=False)
    monkeypatch.delenv("AGENT_WAIT_CONFIG", raising=False)
    monkeypatch.setenv("AGENT_WAIT_HOME", str(tmp_path))
    ledger = configured_ledger()
    assert isinstance(ledger, SqliteLedger)
    sides = bench.FRAMEWORK_SIDES[framework]((2, 6))
    sides.park("handle_message")()
    kept = ledger.records()
    sides.park("framework")()
    assert ledger.records() == kept


@pytest.mark.parametrize(
    ("framework", "side"),
    [(framework, side) for framework, sides in bench.HOST_PROCESSES.items() for side in sides],
)
def test_host_process_publishes_one_question(framework: str, side: str) -> None:
    # The script asserts it published exactly one envelope: a failure raises CalledProcessError.
    assert bench._run_seconds(bench.HOST_PROCESSES[framework][side]) > 0


def test_opentelemetry_sides_record_what_they_claim() -> None:
    from opentelemetry.sdk.trace import ReadableSpan

    sides, end_round = bench.otel_sides()
    plugin, publishing = sides["SDK, in-memory"]
    _, floor = sides["SDK floor, alone"]
    from agent_wait.core._plugins import registry

    manager = registry().manager
    manager.register(plugin, name="bench-otel-smoke")
    try:
        report = publishing()
    finally:
        manager.unregister(name="bench-otel-smoke")
    assert isinstance(report, PublishReport)
    assert report.ok
    outer = floor()
    assert isinstance(outer, ReadableSpan)
    assert outer.name == "agent-wait publish"
    assert end_round() >= 0
    result = bench.bench_opentelemetry(bench.QUICK)
    raw = result.raw
    assert raw["ratio_sdk_in_memory"] == pytest.approx(
        raw["ratio_sdk_publishing_thread"] + raw["ratio_sdk_at_collection"]
    )
    assert raw["ratio_sdk_minus_floor"] == pytest.approx(
        raw["ratio_sdk_in_memory"] - raw["ratio_floor_in_a_publish"]
    )
    assert raw["ratio_sdk_over_floor"] == pytest.approx(
        raw["ratio_sdk_in_memory"] / raw["ratio_floor_in_a_publish"]
    )
    assert result.ratio == raw["ratio_sdk_over_floor"]


@pytest.mark.integration
def test_worker_row_handles_every_answer_on_both_sides() -> None:
    result = bench.bench_worker_sqs(bench.QUICK)
    assert result.passed is not None, result.note
    assert result.raw["answers"] == bench.QUICK.worker_threads * bench.QUICK.worker_per_thread
    assert set(result.raw["seconds"]) == {"serve", "hand_written"}


def test_sweeper_row_shows_an_index_search_in_the_plan(tmp_path: Path) -> None:
    plan = bench.sweep_query_plan(tmp_path / "plan.sqlite3")
    assert any("USING INDEX" in step for step in plan), plan
    assert not any("SCAN" in step for step in plan), plan
    result = bench.bench_sweeper(bench.QUICK)
    assert result.raw["query_plan"] == plan
    assert set(result.raw["seconds"]) == {
        str(bench.QUICK.sweep_stored),
        str(bench.QUICK.sweep_overdue),
    }


@pytest.mark.integration
@pytest.mark.parametrize("use", sorted(scale_out.SHARED))
def test_scale_out_row_resumes_every_thread_once(use: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(scale_out.THREADS_ENV, raising=False)
    monkeypatch.setenv(scale_out.ENTRIES_ENV, use)
    measured = scale_out.measure(3)
    [row] = measured["rows"]
    assert row["entry"] == use
    for run in row["runs"].values():
        assert (run["handled_twice"], run["unfinished"]) == ([], [])
        assert run["resumes_per_second"] > 0
    assert row["clean"]
