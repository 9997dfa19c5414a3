"""One Kafka client connection over asyncio, with kio as the codec.

A connection negotiates API versions when it opens (ApiVersions v3, or v0 when the broker
answers UNSUPPORTED_VERSION, as KIP-511 asks) and then carries requests in order; the
broker answers them in order, so a reader task hands each frame to the oldest request
waiting. Every failure that is not a Kafka answer is a :class:`WireError` with one line:
unreachable, closed, not speaking Kafka, timed out. Its ``kind`` says whose fault it is: an
answer that does not decode (``undecodable``, with the frame and where decoding stopped), a
connection the broker closed or reset (``connection``), anything else (``target``).

With :class:`~coordspec.conformance.security.ClientSecurity` a connection speaks TLS and
authenticates with SASL after ApiVersions; when the broker gives the session a lifetime
(KIP-368) it re-authenticates at 85% of it, holding new requests back until the requests in
flight are answered and SASL is done, as Kafka's clients do.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import io
import os
import socket
import ssl
import struct
import time
from collections import deque
from typing import Any, Literal

import kio.index
from kio._kio_native import get_field_reader  # what entity_reader reads each field with
from kio.serial import entity_reader, entity_writer
from kio.serial.readers import read_compact_array_length, read_legacy_array_length

from coordspec.conformance.security import (
    PLAINTEXT,
    SASL_HANDSHAKE,
    ClientSecurity,
    SecurityError,
    authenticate,
)
from coordspec.reference.wire.entities import build, entity_of

API_VERSIONS = 18
UNSUPPORTED_VERSION = 35
_MAX_FRAME = 100 * 1024 * 1024
_TLS_RECORDS = (0x15, 0x16)  # alert, handshake: a TLS server's first byte
_REAUTHENTICATE_AT = 0.85  # of the session's lifetime
DUMP_LIMIT = 4096  # bytes of a frame a hex dump shows


class WireError(Exception):
    """A connection failed in a way that is not a protocol answer; str() is one line.

    ``raw`` (undecodable): the response frame after its size, ``offset`` where decoding stopped.
    """

    def __init__(
        self,
        message: str,
        kind: Literal["undecodable", "connection", "target"] = "target",
        raw: bytes | None = None,
        offset: int | None = None,
    ) -> None:
        super().__init__(message)
        self.kind, self.raw, self.offset = kind, raw, offset


class Connection:
    def __init__(
        self, address: str, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        self.address = address
        self._reader, self._writer = reader, writer
        self._pending: deque[tuple[int, type, asyncio.Future]] = deque()
        self._correlation = 0
        self._closed: WireError | None = None
        self.last_sent = "no request"  # the last request written, for a broken connection's error
        self._task = asyncio.get_running_loop().create_task(self._read_loop())
        self.versions: dict[int, range] = {}  # api key -> the versions the broker supports
        self.security = PLAINTEXT
        self._held: list[tuple[tuple[int, type, asyncio.Future], bytes]] | None = None
        self._drained: asyncio.Event | None = None  # set when nothing is in flight
        self._reauthentication: asyncio.Task | None = None
        self._detached = False
        self.answered = 0  # responses read

    @property
    def closed(self) -> bool:
        return self._closed is not None

    @classmethod
    async def open(
        cls, host: str, port: int, timeout_s: float, security: ClientSecurity = PLAINTEXT
    ) -> Connection:
        address = f"{host}:{port}"
        context = security.ssl_context()
        try:
            reader, writer = await asyncio.wait_for(
                asyncio.open_connection(
                    host, port, ssl=context, server_hostname=host if context else None
                ),
                timeout_s,
            )
        except TimeoutError:
            raise WireError(
                f"cannot reach {address}: no connection within {timeout_s:g} s"
            ) from None
        except socket.gaierror:
            raise WireError(f"cannot resolve host {host}") from None
        except ssl.SSLCertVerificationError as exc:
            raise WireError(
                f"TLS: certificate of {address} not trusted ({exc.verify_message})"
            ) from None
        except (ssl.SSLError, ConnectionResetError, ConnectionAbortedError) as exc:
            if context is None:
                raise WireError(f"cannot reach {address}: {exc}") from None
            reason = getattr(exc, "reason", None)
            how = f"answered {reason}" if reason else "closed the connection"
            raise WireError(
                f"the broker at {address} does not speak TLS (it {how} at the TLS handshake): "
                "set security.protocol=PLAINTEXT or SASL_PLAINTEXT"
            ) from None
        except OSError as exc:
            reason = (
                os.strerror(exc.errno) if exc.errno else str(exc)
            )  # asyncio's own text repeats the address
            raise WireError(f"cannot reach {address}: {reason}") from None
        connection = cls(address, reader, writer)
        connection.security = security
        try:
            try:
                await connection._negotiate(timeout_s)
            except WireError:
                if not security.tls and await _speaks_tls(host, port):
                    raise WireError(
                        f"the broker at {address} speaks TLS: set security.protocol=SSL or SASL_SSL"
                    ) from None
                raise
            if security.sasl:
                await connection._authenticate(timeout_s)
        except BaseException:
            await connection.close()
            raise
        return connection

    async def _authenticate(self, timeout_s: float) -> None:
        def call(api_key: int, version: int, values: dict) -> Any:
            return self.call(api_key, version, values, timeout_s, held=False)

        try:
            lifetime_ms = await authenticate(call, self.versions, self.security, self.address)
        except SecurityError as exc:
            raise WireError(str(exc)) from None
        if lifetime_ms > 0:
            self._reauthentication = asyncio.get_running_loop().create_task(
                self._reauthenticate(lifetime_ms * _REAUTHENTICATE_AT / 1000, timeout_s)
            )

    async def _reauthenticate(self, after_s: float, timeout_s: float) -> None:
        await asyncio.sleep(after_s)
        self._held = []
        if self._pending:
            self._drained = asyncio.Event()
            await self._drained.wait()
        try:
            await self._authenticate(timeout_s)
        except WireError as exc:
            self._closed = exc  # the broker closes the connection at the session's end
            self._writer.close()
        held, self._held = self._held, None
        for waiting, frame in held:
            if self._closed is None:
                self._pending.append(waiting)
                self._writer.write(frame)
            elif not waiting[2].done():
                waiting[2].set_exception(self._closed)

    async def _negotiate(self, timeout_s: float) -> None:
        try:
            response = await self.call(
                API_VERSIONS,
                3,
                {"client_software_name": "coordspec", "client_software_version": "1"},
                timeout_s,
            )
            if int(response.error_code) == UNSUPPORTED_VERSION:
                response = await self.call(API_VERSIONS, 0, {}, timeout_s)
        except WireError as exc:
            if "speaks TLS" in exc.args[0]:
                raise
            hint = ""
            if exc.kind == "connection" and self.security.tls and not self.security.certificate:
                # asyncio does not tell the TLS alert of a broker that wants one
                hint = " (if it asks for a client certificate, set ssl.certificate.location)"
            raise WireError(
                f"{self.address} does not speak Kafka: "
                f"{exc.args[0].removeprefix(self.address + ': ')}{hint}"
            ) from None
        if int(response.error_code) != 0:
            raise WireError(
                f"{self.address}: ApiVersions answered error {int(response.error_code)}"
            )
        self.versions = {
            int(k.api_key): range(int(k.min_version), int(k.max_version) + 1)
            for k in response.api_keys
        }

    def send(
        self,
        api_key: int,
        version: int,
        entity: Any,
        client_id: str | None = "coordspec",
        held: bool = True,
    ) -> asyncio.Future:
        """Write one request; the future gets ``(response entity, arrival time.monotonic())``.
        While the connection re-authenticates the request waits, unless ``held`` is false."""
        if self._closed:
            raise self._closed
        request_cls = kio.index.load_request_schema(api_key, version)
        header_cls = request_cls.__header_schema__
        self._correlation += 1
        buffer = io.BytesIO()
        entity_writer(header_cls)(
            buffer,
            header_cls(
                request_api_key=api_key,
                request_api_version=version,
                correlation_id=self._correlation,
                client_id=client_id,
            ),
        )
        entity_writer(request_cls)(buffer, entity)
        payload = buffer.getvalue()
        future = asyncio.get_running_loop().create_future()
        waiting = (self._correlation, kio.index.load_response_schema(api_key, version), future)
        frame = struct.pack(">i", len(payload)) + payload
        if held and self._held is not None:
            self._held.append((waiting, frame))
        else:
            self._pending.append(waiting)
            self._writer.write(frame)
        name = f"{request_cls.__name__.removesuffix('Request')} v{version}"
        self.last_sent = f"{name} (correlation id {self._correlation})"
        return future

    async def call(
        self, api_key: int, version: int, values: dict | Any, timeout_s: float, held: bool = True
    ) -> Any:
        """A request from plain values (or an entity) and its decoded response, within ``timeout_s``."""
        entity = (
            build(kio.index.load_request_schema(api_key, version), values)
            if isinstance(values, dict)
            else values
        )
        future = self.send(api_key, version, entity, held=held)
        try:
            response, _ = await asyncio.wait_for(future, timeout_s)
        except TimeoutError:
            name = kio.index.load_request_schema(api_key, version).__name__.removesuffix("Request")
            raise WireError(
                f"{self.address}: no answer to {name} v{version} within {timeout_s:g} s"
            ) from None
        return response

    async def _read_loop(self) -> None:
        error = WireError(f"{self.address}: closed")
        try:
            while True:
                header = await self._reader.readexactly(4)
                size = struct.unpack(">i", header)[0]
                if header[0] in _TLS_RECORDS and header[1] == 3 and not self.security.tls:
                    error = WireError(
                        f"the broker at {self.address} speaks TLS: set security.protocol=SSL "
                        "or SASL_SSL"
                    )
                    break
                if not 4 <= size <= _MAX_FRAME:  # a correlation id at least
                    error = WireError(
                        f"{self.address}: a frame of {size} bytes is no Kafka response",
                        "undecodable",
                        header,
                        0,
                    )
                    break
                payload = await self._reader.readexactly(size)
                arrived = time.monotonic()
                if not self._pending:
                    error = WireError(f"{self.address}: an answer nobody asked for")
                    break
                correlation, response_cls, future = self._pending.popleft()
                self.answered += 1
                if not self._pending and self._drained is not None:
                    self._drained.set()
                if future.done():  # its caller stopped waiting
                    continue
                try:
                    future.set_result((_decode(response_cls, correlation, payload), arrived))
                except WireError as exc:
                    future.set_exception(exc)
        except (asyncio.IncompleteReadError, ConnectionError, OSError) as exc:
            how = "reset" if isinstance(exc, ConnectionResetError) else "closed"
            waiting = " before answering it" if self._pending else ""
            hint = ""
            if self.answered == 1 and not self.security.sasl and SASL_HANDSHAKE in self.versions:
                hint = " (if it asks for SASL, set security.protocol=SASL_SSL or SASL_PLAINTEXT)"
            error = WireError(
                f"the broker {how} the connection to {self.address} after "
                f"{self.last_sent}{waiting}{hint}",
                "connection",
            )
        except asyncio.CancelledError:
            pass
        self._closed = error
        waiting = [entry for entry, _ in self._held or ()]
        while self._pending:
            waiting.insert(0, self._pending.pop())
        for _, _, future in waiting:
            if not future.done():
                future.set_exception(error)
        if self._drained is not None:
            self._drained.set()
        if not self._detached:
            self._writer.close()

    async def detach(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        """The opened (and authenticated) stream, for a caller that frames requests itself
        (the recording proxy); this connection stops reading it and never re-authenticates."""
        self._detached = True
        if self._reauthentication is not None:
            self._reauthentication.cancel()
        await self._stop_reading()
        return self._reader, self._writer

    async def close(self) -> None:
        if self._reauthentication is not None:
            self._reauthentication.cancel()
        await self._stop_reading()
        with contextlib.suppress(Exception):
            await self._writer.wait_closed()

    async def _stop_reading(self) -> None:
        self._task.cancel()
        # Not ``await self._task``: a cancel of the caller (Ctrl-C, the run stopping) would go
        # to the reader, which ends quietly, and the caller, its cancel lost, would go on.
        await asyncio.wait({self._task})


async def _speaks_tls(host: str, port: int, timeout_s: float = 2.0) -> bool:
    """Whether a TLS handshake with ``host:port`` completes (its certificate unchecked): a
    plaintext client's connection closed at once is then a TLS listener's doing."""
    context = ssl.create_default_context()
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
    try:
        _, writer = await asyncio.wait_for(
            asyncio.open_connection(host, port, ssl=context), timeout_s
        )
    except (OSError, TimeoutError):
        return False
    writer.close()
    with contextlib.suppress(Exception):
        await writer.wait_closed()
    return True


def _decode(response_cls: type, correlation: int, payload: bytes) -> Any:
    name = f"{response_cls.__name__} v{response_cls.__version__}"
    header_cls = response_cls.__header_schema__
    try:
        header, offset = entity_reader(header_cls)(payload, 0)
    except Exception as exc:  # noqa: BLE001 - kio raises many kinds on bad input
        raise _undecodable(f"the header of {name}", header_cls, payload, 0, exc) from None
    if header.correlation_id != correlation:
        raise WireError(
            f"{name} came with correlation id {header.correlation_id}, expected {correlation}"
        )
    if (
        response_cls.__api_key__ == API_VERSIONS
        and struct.unpack_from(">h", payload, offset)[0] == UNSUPPORTED_VERSION
    ):
        # KIP-511 asks for v0's format whatever version was asked; the caller retries at v0
        # anyway, so a body in some other format (librdkafka's mock) does not matter.
        return _Unsupported()
    try:
        body, _ = entity_reader(response_cls)(
            payload, offset
        )  # trailing bytes are ignored, as Kafka's clients do
    except Exception as exc:  # noqa: BLE001
        raise _undecodable(name, response_cls, payload, offset, exc) from None
    return body


def _undecodable(what: str, cls: type, payload: bytes, start: int, exc: Exception) -> WireError:
    at = _stop(cls, payload, start)
    return WireError(
        f"cannot decode {what} at byte {at} of {len(payload)}: {type(exc).__name__}: {exc}",
        "undecodable",
        payload,
        at,
    )


def _stop(cls: type, payload: bytes, offset: int) -> int:
    """Where decoding ``cls`` from ``offset`` fails: the start of the innermost field that does
    not decode (kio's errors do not say where). Tagged fields are read as one section. kio's
    readers return what they read and its size."""
    for field in dataclasses.fields(cls):
        if "tag" in field.metadata:
            continue
        try:
            _, size = get_field_reader(cls, field, False, False)(payload, offset)
        except Exception:  # noqa: BLE001
            inner = entity_of(field.type)
            if inner is None or field.type == inner | None:  # a nullable struct: left at its start
                return offset
            if field.type is inner:
                return _stop(inner, payload, offset)
            read_length = (
                read_compact_array_length if cls.__flexible__ else read_legacy_array_length
            )
            try:
                count, size = read_length(payload, offset)
            except Exception:  # noqa: BLE001
                return offset
            at = offset + size
            for _ in range(count or 0):
                try:
                    _, size = entity_reader(inner)(payload, at)
                except Exception:  # noqa: BLE001
                    return _stop(inner, payload, at)
                at += size
            return at
        offset += size
    return offset


def hex_dump(data: bytes, mark: int | None = None, limit: int = DUMP_LIMIT) -> str:
    """Offsets, 16 bytes a line and their ASCII, with a caret line under byte ``mark``; at
    most ``limit`` bytes, around ``mark``, with a note of the full length."""
    start = 0
    if len(data) > limit:
        around = mark if mark is not None else 0
        start = max(0, min(around - limit // 2, len(data) - limit)) // 16 * 16
    shown = data[start : start + limit]
    lines = []
    for row in range(start, start + len(shown), 16):
        chunk = data[row : min(row + 16, start + len(shown))]
        cells = [f"{b:02x}" for b in chunk] + ["  "] * (16 - len(chunk))
        text = "".join(chr(b) if 32 <= b < 127 else "." for b in chunk)
        lines.append(f"{row:08x}  {' '.join(cells[:8])}  {' '.join(cells[8:])}  |{text}|")
        if mark is not None and row <= mark < row + 16:
            column = 10 + 3 * (mark - row) + (1 if mark - row >= 8 else 0)
            lines.append(" " * column + f"^^ decoding stopped at byte {mark}")
    if mark is not None and mark >= len(data):
        lines.append(f"{'':10}^^ decoding stopped at byte {mark}, the end of the frame")
    if len(shown) < len(data):
        lines.append(f"({len(data)} bytes in all; bytes {start}-{start + len(shown) - 1} shown)")
    return "\n".join(lines)


class _Unsupported:
    """An ApiVersions answer of UNSUPPORTED_VERSION."""

    error_code = UNSUPPORTED_VERSION
    api_keys = ()
