"""The built-in server of the webhook entry point, under raw sockets that break the rules."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent_wait.webhook import WebhookEntry
from agent_wait.webhook._entry import MAX_BODY

ANSWER = json.dumps(
    {"thread_id": "order-4471", "question_id": "q1", "answer": {"action": "approve"}}
).encode()


@pytest.fixture
def host(tmp_path: Path) -> Iterator[WebhookEntry]:
    with WebhookEntry(listen="127.0.0.1:0", path=str(tmp_path / "host.sqlite3")) as built:
        yield built


def connect(entry: WebhookEntry) -> socket.socket:
    assert entry.address is not None
    # Generous: a server that waits for what is never sent fails the test instead of hanging.
    return socket.create_connection(entry.address, timeout=60)


def head(headers: dict[str, str]) -> bytes:
    lines = "".join(f"{name}: {value}\r\n" for name, value in headers.items())
    return f"POST / HTTP/1.1\r\nhost: 127.0.0.1\r\n{lines}\r\n".encode()


def response(connection: socket.socket) -> tuple[int, bytes]:
    """The status and the rest of what the server sends until it closes the connection."""
    data = b""
    while chunk := connection.recv(65536):
        data += chunk
    status_line, _, rest = data.partition(b"\r\n")
    return int(status_line.split()[1]), rest


@pytest.mark.parametrize("length", ["-1", "abc", "1e3", "+5", "0x10", "5, 6"])
def test_a_content_length_that_is_not_a_byte_count_is_refused(
    host: WebhookEntry, length: str
) -> None:
    with connect(host) as connection:
        connection.sendall(head({"content-length": length}) + ANSWER)
        status, rest = response(connection)
    assert status == 400
    assert b"Content-Length" in rest


def test_a_huge_content_length_is_refused_before_the_body_is_sent(host: WebhookEntry) -> None:
    for length in (str(MAX_BODY + 1), "9" * 5000):
        with connect(host) as connection:
            # The body is never sent: a server that tried to read it would wait for it.
            connection.sendall(head({"content-length": length}))
            status, rest = response(connection)
        assert status == 413
        assert b"larger than" in rest
    with connect(host) as connection:
        connection.sendall(head({"content-length": str(MAX_BODY + 1), "expect": "100-continue"}))
        status, _ = response(connection)
    assert status == 413  # not "100 Continue": the client is told before it sends the body


def test_a_chunked_body_is_counted_as_it_is_read(host: WebhookEntry) -> None:
    piece = b"x" * 65536
    with connect(host) as connection:
        connection.sendall(head({"transfer-encoding": "chunked"}))
        for _ in range(MAX_BODY // len(piece)):
            connection.sendall(b"%x\r\n%s\r\n" % (len(piece), piece))
        # One byte more is announced and never sent: the server refuses on the size line.
        connection.sendall(b"1\r\n")
        status, rest = response(connection)
    assert status == 413
    assert b"larger than" in rest
    with connect(host) as connection:
        connection.sendall(head({"transfer-encoding": "chunked"}) + b"%x\r\n" % (MAX_BODY + 1))
        assert response(connection)[0] == 413


def test_a_chunked_body_within_the_limit_is_taken(host: WebhookEntry) -> None:
    with connect(host) as connection:
        half = len(ANSWER) // 2
        connection.sendall(
            head({"transfer-encoding": "chunked", "connection": "close"})
            + b"%x;name=value\r\n%s\r\n%x\r\n%s\r\n0\r\ntrailer: 1\r\n\r\n"
            % (half, ANSWER[:half], len(ANSWER) - half, ANSWER[half:])
        )
        [received] = host.receive(wait=30)
        assert received.message["question_id"] == "q1"
        host.ack(received)
        status, _ = response(connection)
    assert status == 200


@pytest.mark.parametrize(
    ("headers", "chunks", "named"),
    [
        ({"transfer-encoding": "gzip, chunked"}, b"", b"Transfer-Encoding"),
        ({"transfer-encoding": "chunked", "content-length": "5"}, b"", b"both"),
        ({"transfer-encoding": "chunked"}, b"-1\r\n", b"chunk size"),
        ({"transfer-encoding": "chunked"}, b"1_0\r\n", b"chunk size"),
        ({"transfer-encoding": "chunked"}, b"2\r\nabc\r\n", b"longer than its size"),
        ({"transfer-encoding": "chunked"}, b"1" * 2000, b"chunk size line is longer"),
    ],
)
def test_malformed_framing_is_refused_400(
    host: WebhookEntry, headers: dict[str, str], chunks: bytes, named: bytes
) -> None:
    with connect(host) as connection:
        connection.sendall(head(headers) + chunks)
        status, rest = response(connection)
    assert status == 400
    assert named in rest


@pytest.mark.parametrize(
    "sent",
    [
        b"POST / HTTP/1.1\r\nhost: 127.0.0.1\r\n",  # headers never finished
        head({"content-length": str(len(ANSWER))}) + ANSWER[:10],  # body never finished
        head({"transfer-encoding": "chunked"}) + b"10\r\nabc",  # a chunk never finished
        b"",  # connected, sent nothing
    ],
)
def test_a_request_that_stops_half_way_is_dropped(tmp_path: Path, sent: bytes) -> None:
    with WebhookEntry(
        listen="127.0.0.1:0", path=str(tmp_path / "host.sqlite3"), read_timeout=0.5
    ) as host:
        with connect(host) as connection:
            connection.sendall(sent)
            # The server closes it; a server without a deadline keeps it open forever.
            assert connection.recv(65536) == b""
        assert host.receive() == []


def test_connections_past_the_cap_are_answered_503_until_one_ends(tmp_path: Path) -> None:
    with WebhookEntry(
        listen="127.0.0.1:0", path=str(tmp_path / "host.sqlite3"), max_connections=2
    ) as host:
        idle = [connect(host), connect(host)]  # each holds a thread until it sends or ends
        with connect(host) as third:
            status, rest = response(third)
        assert status == 503
        assert b"retry-after: 1" in rest
        idle.pop().close()
        # The slot comes back once the server has seen that connection end.
        deadline = time.monotonic() + 60
        while status == 503 and time.monotonic() < deadline:
            with connect(host) as fourth:
                fourth.sendall(head({"content-length": "2", "connection": "close"}) + b"[]")
                status, _ = response(fourth)
        assert status == 202  # served: a body that is no message is dead-lettered at once
        idle.pop().close()
