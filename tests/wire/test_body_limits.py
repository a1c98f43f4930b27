"""Every server ctxtap runs reads a request body within a stated limit: a Content-Length or chunk size is
only the client's claim, so a 100 GB one is answered 413 at once (nothing allocated, the connection
closed), a malformed one 400, and the server goes on answering. Real servers on 127.0.0.1, raw sockets."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ctxtap.capture.otlp_receiver import TelemetryReceiver
from ctxtap.modelserver import ModelServer
from ctxtap.replay.cassette import Cassette
from ctxtap.replay.server import ReplayServer
from ctxtap.wire.httpbody import MAX_BODY_BYTES

LIMIT = 1000  # a small configured limit keeps the tests fast
HUGE = 107_374_182_400  # 100 GiB
TIB_CHUNK = "10000000000"  # 1 TiB, in hex


class Answer:
    def __init__(self, status: int, headers: dict[str, str], body: bytes, closed: bool, seconds: float) -> None:
        self.status, self.headers, self.body, self.closed, self.seconds = status, headers, body, closed, seconds

    def json(self) -> dict:
        return json.loads(self.body)


def exchange(port: int, raw: bytes, timeout: float = 5) -> Answer:
    """Send `raw` as written, read one response, and tell whether the server then closed the connection."""
    start = time.monotonic()
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(raw)
        data = b""
        while b"\r\n\r\n" not in data:
            piece = sock.recv(65536)
            assert piece, f"the server closed without answering (after {data!r})"
            data += piece
        head, _, rest = data.partition(b"\r\n\r\n")
        status_line, *lines = head.decode("latin-1").split("\r\n")
        headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines)}
        length = int(headers.get("content-length", "0"))
        while len(rest) < length:
            piece = sock.recv(65536)
            assert piece, "the answer was cut short"
            rest += piece
        seconds = time.monotonic() - start
        sock.settimeout(1)  # a refusal ends the connection at once; an answered request keeps it open
        try:
            closed = sock.recv(1) == b""
        except (ConnectionResetError, TimeoutError):
            closed = False
    return Answer(int(status_line.split()[1]), headers, rest[:length], closed, seconds)


def post(path: str, body: bytes = b"", *, headers: str = "", length: int | str | None = None) -> bytes:
    """A POST as written; `length` replaces the Content-Length (None: the body's), headers are added."""
    declared = "" if "transfer-encoding" in headers.lower() else \
        f"Content-Length: {len(body) if length is None else length}\r\n"
    return (f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n{declared}{headers}"
            "\r\n").encode() + body


def chunked(path: str, chunks: bytes) -> bytes:
    return post(path, chunks, headers="Transfer-Encoding: chunked\r\n")


# Each server under test: (port, a path that takes a body, what an ordinary body gets answered).


@pytest.fixture
def replay_server(tmp_path: Path) -> Iterator[tuple[int, str]]:
    server = ReplayServer(Cassette("c", tmp_path, [], True), speed=0, max_body_bytes=LIMIT).start()
    yield server.port, f"/_replay/{server.token}/api.example.com/v1/settings"  # a side request: 200 {}
    server.stop()


@pytest.fixture
def model_server() -> Iterator[tuple[int, str]]:
    with ModelServer(max_body_bytes=LIMIT) as server:
        yield server.port, "/v1/messages"


def _messages(size: int) -> bytes:
    """An Anthropic Messages request padded to exactly `size` bytes."""
    body = {"model": "claude-x", "max_tokens": 10, "messages": [{"role": "user", "content": ""}]}
    pad = size - len(json.dumps(body))
    body["messages"][0]["content"] = "x" * pad
    data = json.dumps(body).encode()
    assert len(data) == size
    return data


SERVERS = ["replay_server", "model_server"]


def test_the_default_limits() -> None:
    from ctxtap.reports.live.server import MAX_BODY_BYTES as LIVE

    assert MAX_BODY_BYTES == 64 << 20 and LIVE == 64 << 10
    assert ReplayServer(Cassette("c", Path("."), [], True)).max_body_bytes == MAX_BODY_BYTES
    assert ModelServer().max_body_bytes == MAX_BODY_BYTES
    receiver = TelemetryReceiver(lambda e: None).start()
    assert receiver.max_bytes == 8 << 20
    receiver.stop()


@pytest.mark.parametrize("name", SERVERS)
def test_a_100_gib_content_length_is_refused_at_once_and_the_server_goes_on(name: str, request) -> None:
    port, path = request.getfixturevalue(name)
    answer = exchange(port, post(path, length=HUGE))
    assert answer.status == 413 and answer.seconds < 2 and answer.closed
    assert "limit of 1000 bytes" in json.dumps(answer.json())
    ok = exchange(port, post(path, _messages(200)))
    assert ok.status == 200, ok.body


@pytest.mark.parametrize("name", SERVERS)
def test_a_1_tib_chunk_is_refused_and_a_bad_chunk_size_is_a_400(name: str, request) -> None:
    port, path = request.getfixturevalue(name)
    huge = exchange(port, chunked(path, f"{TIB_CHUNK}\r\n".encode() + b"x" * 100))
    assert huge.status == 413 and huge.closed and huge.seconds < 2
    for line in (b"zz", b"-1", b"0x10", b"", b"1" * 5000):
        bad = exchange(port, chunked(path, line + b"\r\n" + b"x" * 16 + b"\r\n0\r\n\r\n"))
        assert bad.status == 400 and bad.closed, (line[:10], bad.status)
        assert bad.json()
    # chunks adding up to more than the limit, each under it
    many = exchange(port, chunked(path, b"".join(b"190\r\n" + b"x" * 400 + b"\r\n" for _ in range(3))))
    assert many.status == 413 and many.closed
    ok = exchange(port, chunked(path, b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in
                                               (_messages(LIMIT)[:600], _messages(LIMIT)[600:])) + b"0\r\n\r\n"))
    assert ok.status == 200, ok.body


@pytest.mark.parametrize("name", SERVERS)
@pytest.mark.parametrize(("length", "status"), [
    ("-1", 400), ("12abc", 400), ("1e3", 400), ("0x10", 400), ("10, 20", 400), ("2\r\nContent-Length: 3", 400),
    ("9" * 40, 413),  # a length, though no int64 holds it
])
def test_a_content_length_that_is_no_length_is_a_400(name: str, length: str, status: int, request) -> None:
    port, path = request.getfixturevalue(name)
    answer = exchange(port, post(path, b"{}", length=length))
    assert answer.status == status and answer.closed, answer.body
    assert answer.json()


@pytest.mark.parametrize("name", SERVERS)
def test_a_body_at_the_limit_is_read_and_one_byte_more_is_not(name: str, request) -> None:
    port, path = request.getfixturevalue(name)
    assert exchange(port, post(path, _messages(LIMIT))).status == 200
    over = exchange(port, post(path, _messages(LIMIT + 1)))
    assert over.status == 413 and over.closed  # answered, though the client had sent the whole body


def test_the_model_servers_limit_is_a_command_line_option() -> None:
    proc = subprocess.Popen([sys.executable, "-m", "ctxtap.modelserver", "--max-body-bytes", str(LIMIT)],
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        port = int(proc.stdout.readline().strip().rsplit(":", 1)[1])
        assert exchange(port, post("/v1/messages", _messages(LIMIT + 1))).status == 413
        assert exchange(port, post("/v1/messages", _messages(LIMIT))).status == 200
    finally:
        proc.terminate()
        proc.wait(10)


def test_the_replay_servers_limit_is_a_command_line_option(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from types import SimpleNamespace

    from click.testing import CliRunner

    import ctxtap.replay.cassette as cassette
    import ctxtap.replay.readonly as readonly
    from ctxtap.cli.main import main

    seen: dict[str, object] = {}

    def run_readonly(*args: object, **kwargs: object) -> None:
        seen.update(kwargs)
        raise SystemExit(0)

    recorded = SimpleNamespace(problem=None)
    monkeypatch.setattr(cassette, "load", lambda path: Cassette("c", path, [recorded], True))  # type: ignore[list-item]
    monkeypatch.setattr(readonly, "run_readonly", run_readonly)
    result = CliRunner().invoke(main, ["replay", str(tmp_path), "--out", str(tmp_path / "r"),
                                       "--max-body-bytes", "4096", "--", "true"])
    assert result.exit_code == 0, result.output
    assert seen["max_body_bytes"] == 4096
    refused = CliRunner().invoke(main, ["replay", str(tmp_path), "--max-body-bytes", "0", "--", "true"])
    assert refused.exit_code == 2 and "--max-body-bytes" in refused.output


# The OTLP receiver keeps an over-limit payload's first bytes (marked oversized) and answers 413.


@pytest.fixture
def otlp() -> Iterator[tuple[TelemetryReceiver, list]]:
    payloads: list = []
    receiver = TelemetryReceiver(payloads.append, max_bytes=LIMIT).start()
    yield receiver, payloads
    receiver.stop()


def test_the_otlp_receiver_answers_a_1_tib_chunk_with_413_and_no_traceback(
        otlp: tuple[TelemetryReceiver, list], capfd: pytest.CaptureFixture[str]) -> None:
    receiver, payloads = otlp
    path = f"/{receiver.token}/v1/logs"
    body = b"x" * 2000
    answer = exchange(receiver.port, chunked(path, f"{TIB_CHUNK}\r\n".encode() + body))
    assert answer.status == 413 and answer.closed and answer.seconds < 2
    bad = exchange(receiver.port, chunked(path, b"zz\r\nxx\r\n0\r\n\r\n"))
    assert bad.status == 400 and bad.closed
    huge = exchange(receiver.port, post(path, body, length=HUGE))
    assert huge.status == 413 and huge.closed and huge.seconds < 2  # the other 100 GiB are never waited for
    assert exchange(receiver.port, post(path, b"{}")).status == 200
    err = capfd.readouterr().err
    assert "Traceback" not in err and "MemoryError" not in err, err
    assert [(p.received, len(p.body), p.declared_bytes) for p in payloads] == [
        ("oversized", LIMIT, None), ("truncated", 0, None), ("oversized", LIMIT, HUGE), ("complete", 2, 2)]


def test_the_otlp_receiver_keeps_its_8_mib_behaviour_in_bounded_memory(otlp: tuple[TelemetryReceiver, list]) -> None:
    receiver, payloads = otlp
    path = f"/{receiver.token}/v1/logs"
    body = bytes(range(256)) * 20  # 5,120 bytes against a 1,000-byte limit
    answer = exchange(receiver.port, post(path, body))
    assert answer.status == 413
    stream = exchange(receiver.port, chunked(path, b"".join(b"400\r\n" + body[i:i + 1024] + b"\r\n"
                                                             for i in range(0, 5120, 1024)) + b"0\r\n\r\n"))
    assert stream.status == 413
    assert [(p.received, p.body, p.declared_bytes) for p in payloads] == [
        ("oversized", body[:LIMIT], len(body)), ("oversized", body[:LIMIT], None)]
