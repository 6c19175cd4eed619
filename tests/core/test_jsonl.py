"""The jsonl announcer: one envelope per line, atomic appends, concurrent writers."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent_wait.core import BaseAnnounce, Question, WaitEnvelope, announcer, publish
from agent_wait.core._jsonl import JsonlAnnounce
from agent_wait.testing import AnnouncerContract, sample_questions


def read_lines(path: Path) -> list[dict[str, Any]]:
    raw = path.read_bytes()
    assert raw.endswith(b"\n") or not raw
    return [json.loads(line) for line in raw.split(b"\n") if line]


class TestJsonlContract(AnnouncerContract):
    @pytest.fixture(autouse=True)
    def _directory(self, tmp_path: Path) -> None:
        self.directory = tmp_path

    def make_announcer(self) -> BaseAnnounce:
        return JsonlAnnounce(self.directory / "nested" / "questions.jsonl")

    def make_failing_announcer(self) -> BaseAnnounce:
        # A regular file where a directory is needed: every open fails with NotADirectoryError.
        blocker = self.directory / "blocker"
        blocker.write_text("")
        return JsonlAnnounce(blocker / "questions.jsonl")

    def received(self, announcer: BaseAnnounce) -> list[dict[str, Any]]:
        assert isinstance(announcer, JsonlAnnounce)
        return read_lines(announcer.path)


def test_lines_are_the_envelope_json_in_contract_order(tmp_path: Path) -> None:
    path = tmp_path / "q.jsonl"
    report = publish(sample_questions(2), "t-1", JsonlAnnounce(path), strict=True)
    lines = path.read_bytes().splitlines()
    assert lines == [e.to_json() for e in report.envelopes]
    # The contract's fields; the optional ones are absent, as these questions have none.
    assert list(json.loads(lines[0])) == [
        f for f, info in WaitEnvelope.model_fields.items() if info.exclude_if is None
    ]


def test_deliver_many_is_a_single_write(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    writes: list[bytes] = []
    real_write = os.write

    def recording_write(fd: int, data: bytes) -> int:
        writes.append(bytes(data))
        return real_write(fd, data)

    monkeypatch.setattr(os, "write", recording_write)
    path = tmp_path / "q.jsonl"
    publish(sample_questions(5), "t-1", JsonlAnnounce(path), strict=True)
    assert len(writes) == 1
    assert writes[0].count(b"\n") == 5


def test_short_write_is_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A disk-full short write cannot be produced on demand; inject it.
    real_write = os.write
    monkeypatch.setattr(os, "write", lambda fd, data: real_write(fd, data[:10]))
    report = publish(sample_questions(2), "t-1", JsonlAnnounce(tmp_path / "q.jsonl"))
    assert len(report.failures) == 2
    assert "wrote 10 of" in (report.failures[0].error or "")


def test_appends_to_existing_file_and_follows_rotation(tmp_path: Path) -> None:
    path = tmp_path / "q.jsonl"
    sink = JsonlAnnounce(path)
    publish(sample_questions(1), "t-1", sink, strict=True)
    path.rename(tmp_path / "q.jsonl.1")
    publish(sample_questions(1), "t-1", sink, strict=True)
    assert len(read_lines(path)) == 1
    assert len(read_lines(tmp_path / "q.jsonl.1")) == 1


def test_concurrent_threads_never_interleave_lines(tmp_path: Path) -> None:
    path = tmp_path / "q.jsonl"
    sink = JsonlAnnounce(path)
    # Large envelopes make interleaving likely if writes were not atomic appends.
    big = "x" * 50_000

    def worker(index: int) -> None:
        for count in (1, 3):
            questions = [
                Question(
                    question_id=f"q-{index}-{count}-{n}", question={"blob": big, "worker": index}
                )
                for n in range(count)
            ]
            publish(questions, f"t-{index}", sink, strict=True)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    lines = read_lines(path)
    assert len(lines) == 8 * 4
    for line in lines:
        WaitEnvelope.model_validate(line)


_WRITER = """
import sys
from agent_wait.core import publish
from agent_wait.core._jsonl import JsonlAnnounce
from agent_wait.testing import sample_questions
sink = JsonlAnnounce(sys.argv[1])
for _ in range(5):
    publish(sample_questions(4), "proc-" + sys.argv[2], sink, strict=True)
"""


def test_concurrent_processes_never_interleave_lines(tmp_path: Path) -> None:
    path = tmp_path / "q.jsonl"
    processes = [
        subprocess.Popen([sys.executable, "-c", _WRITER, str(path), str(i)]) for i in range(3)
    ]
    assert [process.wait(timeout=60) for process in processes] == [0, 0, 0]
    lines = read_lines(path)
    assert len(lines) == 3 * 5 * 4
    assert {line["thread_id"] for line in lines} == {"proc-0", "proc-1", "proc-2"}


def test_configured_by_name(tmp_path: Path) -> None:
    sink = announcer("jsonl", path=str(tmp_path / "q.jsonl"))
    assert isinstance(sink, JsonlAnnounce)
    assert sink.name == "jsonl"


@pytest.mark.parametrize("path", ["", "   "])
def test_empty_path_is_refused(path: str) -> None:
    with pytest.raises(ValueError, match="path"):
        JsonlAnnounce(path)


def test_home_is_expanded(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    assert JsonlAnnounce("~/q.jsonl").path == tmp_path / "q.jsonl"


@pytest.fixture
def umask_022() -> Iterator[None]:
    # The usual umask, under which a file created without an explicit mode is world-readable.
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX file modes")
@pytest.mark.usefixtures("umask_022")
def test_a_created_file_is_private_and_an_existing_one_keeps_its_mode(tmp_path: Path) -> None:
    path = tmp_path / "new" / "questions.jsonl"
    publish(sample_questions(1), "t", JsonlAnnounce(path), strict=True)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700

    existing = tmp_path / "audit.jsonl"
    existing.write_text("")
    existing.chmod(0o644)
    publish(sample_questions(1), "t", JsonlAnnounce(existing), strict=True)
    assert stat.S_IMODE(existing.stat().st_mode) == 0o644
    assert len(read_lines(existing)) == 1
