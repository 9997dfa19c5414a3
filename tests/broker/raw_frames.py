"""Raw sockets to a broker, for the bad-input tests: connect, send any bytes, and read what
comes back until the broker closes, failing on a hang."""

from __future__ import annotations

import socket
import struct
import time


def connect(address: tuple[str, int], timeout_s: float) -> socket.socket:
    sock = socket.create_connection(address, timeout=timeout_s)
    sock.setsockopt(
        socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0)
    )  # no TIME_WAIT pile-up
    return sock


def read_until_closed(sock: socket.socket, timeout_s: float) -> bytes:
    """Everything the broker sends until it closes; fails on a hang."""
    deadline = time.monotonic() + timeout_s
    data = b""
    while True:
        sock.settimeout(max(deadline - time.monotonic(), 0.001))
        try:
            chunk = sock.recv(65536)
        except TimeoutError:
            raise AssertionError(
                f"the broker neither answered nor closed within {timeout_s} s"
            ) from None
        except ConnectionResetError:
            return data
        if not chunk:
            return data
        data += chunk


def split_frames(data: bytes) -> list[bytes]:
    frames, position = [], 0
    while position < len(data):
        assert len(data) - position >= 4, "a partial length prefix"
        (length,) = struct.unpack_from(">i", data, position)
        assert 4 <= length <= len(data) - position - 4, (
            f"a response frame of {length} bytes is cut short"
        )
        frames.append(data[position + 4 : position + 4 + length])
        position += 4 + length
    return frames


def exchange(address: tuple[str, int], data: bytes, timeout_s: float) -> list[bytes]:
    """Send ``data``, half-close, and return the response frames the broker sent before closing."""
    with connect(address, timeout_s) as sock:
        try:
            sock.sendall(data)
            sock.shutdown(socket.SHUT_WR)
        except OSError:
            pass  # the broker already closed on an earlier part of the data
        return split_frames(read_until_closed(sock, timeout_s))


def answered(sock: socket.socket, request: bytes) -> bool:
    """Whether ``request`` on an open ``sock`` gets a response (False: the broker closed it)."""
    try:
        sock.sendall(request)
        return len(sock.recv(65536)) > 0
    except (ConnectionResetError, BrokenPipeError):
        return False


def read_from_a_client_that_never_reads(sock: socket.socket, request: bytes) -> int:
    """Pipeline ``request`` without reading any answer: 3 s for the answers to back up and
    the broker to stop reading, then how many bytes it still took in 2 s more."""
    sock.setblocking(False)
    chunk, sent = request * 1000, 0

    def send_for(seconds: float) -> None:
        nonlocal sent
        until = time.monotonic() + seconds
        while time.monotonic() < until:
            try:
                sent += sock.send(chunk[sent % len(chunk) :])
            except BlockingIOError:
                time.sleep(0.01)

    send_for(3)
    before = sent
    send_for(2)
    return sent - before
