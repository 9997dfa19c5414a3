"""A broker in a child process, for tests and tools: ``with BrokerProcess(data_dir) as b: b.bootstrap``.

The child listens on a free port (``--port 0``) and prints it; the parent waits for that
line with a timeout, and on exit stops the child with SIGTERM (SIGKILL if it lingers).
``Connection`` is a minimal blocking Kafka client for tests and benchmarks: requests
encoded from plain values, frames pipelined, responses decoded by kio.
"""

from __future__ import annotations

import io
import os
import re
import selectors
import signal
import socket
import struct
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Self

import kio.index
from kio.serial import entity_reader, entity_writer

from coordspec.reference.wire.entities import build

_SERVING = re.compile(r"serving on ([\d.]+):(\d+)")
_ADVERTISED = re.compile(r"advertised as ([^),]+)")  # when it binds a wildcard address


class BrokerProcess:
    def __init__(
        self,
        data_dir: Path,
        *args: str,
        start_timeout_s: float = 20.0,
        launcher: tuple[str, ...] = (),
    ) -> None:
        self.data_dir = data_dir
        self.args = args
        self.launcher = launcher  # Python options before ``-m coordspec.broker.server``, e.g. ("-m", "cProfile", "-o", path)
        self.start_timeout_s = start_timeout_s
        self.process: subprocess.Popen | None = None
        self.host, self.port = "127.0.0.1", 0

    @property
    def stderr_path(self) -> Path:
        return self.data_dir.parent / f"{self.data_dir.name}.stderr"

    def stderr(self) -> str:
        """What the broker wrote to stderr so far (warnings, internal errors)."""
        return self.stderr_path.read_text() if self.stderr_path.exists() else ""

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"

    def start(self) -> Self:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        # stderr goes to a file: a pipe nobody reads would block the broker once full.
        with open(self.stderr_path, "ab") as stderr:
            self.process = subprocess.Popen(
                [
                    sys.executable,
                    *self.launcher,
                    "-m",
                    "coordspec.broker.server",
                    "--port",
                    "0",
                    "--data",
                    str(self.data_dir),
                    *self.args,
                ],
                stdout=subprocess.PIPE,
                stderr=stderr,
                cwd=Path(__file__).resolve().parent.parent,
            )
        deadline = time.monotonic() + self.start_timeout_s
        seen = ""
        with selectors.DefaultSelector() as selector:
            selector.register(self.process.stdout, selectors.EVENT_READ)
            while (
                time.monotonic() < deadline
                and _SERVING.search(seen) is None
                and self.process.poll() is None
            ):
                if selector.select(0.05):
                    seen += os.read(self.process.stdout.fileno(), 4096).decode()
        if (match := _SERVING.search(seen)) is not None:
            advertised = _ADVERTISED.search(seen)
            self.host = advertised.group(1) if advertised else match.group(1)
            self.port = int(match.group(2))
            return self
        if self.process.poll() is not None:
            raise RuntimeError(
                f"broker exited with {self.process.returncode}: {self.stderr().strip()}"
            )
        self.stop()
        raise RuntimeError(f"broker did not start within {self.start_timeout_s} s")

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def stop(self, timeout_s: float = 10.0) -> int | None:
        """Stop the child; its exit status (None if it had to be killed)."""
        if self.process is None:
            return None
        process, self.process = self.process, None
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                return process.wait(timeout_s)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
                return None
        return process.returncode

    def kill(self) -> None:
        """SIGKILL: no clean stop, as a crash."""
        if self.process is not None:
            self.process.kill()
            self.process.wait()
            self.process = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def encode_request(
    api_key: int,
    version: int,
    values: dict[str, Any],
    correlation_id: int = 1,
    client_id: str = "coordspec-test",
) -> bytes:
    """One framed request of ``api_key`` at ``version`` from plain values."""
    cls = kio.index.load_request_schema(api_key, version)
    buffer = io.BytesIO()
    entity_writer(cls.__header_schema__)(
        buffer,
        build(
            cls.__header_schema__,
            {
                "request_api_key": api_key,
                "request_api_version": version,
                "correlation_id": correlation_id,
                "client_id": client_id,
            },
        ),
    )
    entity_writer(cls)(buffer, build(cls, values))
    payload = buffer.getvalue()
    return struct.pack(">i", len(payload)) + payload


def decode_response(api_key: int, version: int, payload: bytes) -> tuple[int, Any]:
    """The correlation id and kio response entity of one response frame's payload."""
    cls = kio.index.load_response_schema(api_key, version)
    header, offset = entity_reader(cls.__header_schema__)(payload, 0)
    body, _ = entity_reader(cls)(payload, offset)
    return header.correlation_id, body


class Connection:
    """A blocking connection to a broker: ``send`` pipelines requests, ``receive`` reads replies in order."""

    def __init__(self, host: str, port: int, timeout_s: float = 30.0) -> None:
        self.sock = socket.create_connection((host, port), timeout=timeout_s)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._buffer = b""
        self._correlation_id = 0
        self._sent: list[tuple[int, int, int]] = []  # (correlation id, api key, version), in order

    def send(self, api_key: int, version: int, values: dict[str, Any]) -> int:
        self._correlation_id += 1
        self.sock.sendall(encode_request(api_key, version, values, self._correlation_id))
        self._sent.append((self._correlation_id, api_key, version))
        return self._correlation_id

    def read_frame(self) -> bytes:
        while True:
            if len(self._buffer) >= 4:
                (length,) = struct.unpack_from(">i", self._buffer)
                if len(self._buffer) >= 4 + length:
                    frame, self._buffer = self._buffer[4 : 4 + length], self._buffer[4 + length :]
                    return frame
            chunk = self.sock.recv(1 << 16)
            if not chunk:
                raise ConnectionError("the broker closed the connection")
            self._buffer += chunk

    def receive(self) -> tuple[int, Any]:
        """The next response: (correlation id, kio entity), decoded at the version it was asked at."""
        _, api_key, version = self._sent.pop(0)
        return decode_response(api_key, version, self.read_frame())

    def request(self, api_key: int, version: int, values: dict[str, Any]) -> Any:
        self.send(api_key, version, values)
        return self.receive()[1]

    def close(self) -> None:
        self.sock.close()
