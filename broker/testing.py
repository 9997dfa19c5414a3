"""A broker in a child process, for tests and tools: ``with BrokerProcess(data_dir) as b: b.bootstrap``.

The child listens on a free port (``--port 0``) and prints it; the parent waits for that
line with a timeout, and on exit stops the child with SIGTERM (SIGKILL if it lingers).
"""

from __future__ import annotations

import os
import re
import selectors
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Self

_SERVING = re.compile(r"serving on ([\d.]+):(\d+)")


class BrokerProcess:
    def __init__(self, data_dir: Path, *args: str, start_timeout_s: float = 20.0) -> None:
        self.data_dir = data_dir
        self.args = args
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
                [sys.executable, "-m", "broker.server", "--port", "0", "--data", str(self.data_dir), *self.args],
                stdout=subprocess.PIPE, stderr=stderr, cwd=Path(__file__).resolve().parent.parent,
            )
        deadline = time.monotonic() + self.start_timeout_s
        seen = ""
        with selectors.DefaultSelector() as selector:
            selector.register(self.process.stdout, selectors.EVENT_READ)
            while time.monotonic() < deadline and _SERVING.search(seen) is None and self.process.poll() is None:
                if selector.select(0.05):
                    seen += os.read(self.process.stdout.fileno(), 4096).decode()
        if (match := _SERVING.search(seen)) is not None:
            self.host, self.port = match.group(1), int(match.group(2))
            return self
        if self.process.poll() is not None:
            raise RuntimeError(f"broker exited with {self.process.returncode}: {self.stderr().strip()}")
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

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
