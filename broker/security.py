"""The brokers' client listener secured: TLS, and SASL PLAIN or SCRAM-SHA-256/512.

``--security-config FILE`` (a Java properties file) takes Kafka's names (Kafka 3.9,
``BrokerSecurityConfigs``, ``SslConfigs``):

- ``security.protocol``: PLAINTEXT (default), SSL, SASL_PLAINTEXT or SASL_SSL. Kafka gives
  each listener its protocol in ``listeners`` and ``listener.security.protocol.map``;
  coordspec's brokers have one client listener, at ``--host``/``--port``.
- ``ssl.keystore.location``: a PEM file with the certificate chain and the private key
  (Kafka's ``ssl.keystore.type=PEM``; no JKS or PKCS#12), ``ssl.key.password`` its key's.
- ``ssl.truststore.location`` (PEM CAs) and ``ssl.client.auth`` (none, requested, required)
  for client certificates.
- ``sasl.enabled.mechanisms``: default SCRAM-SHA-256,SCRAM-SHA-512 (Kafka's default,
  GSSAPI, is not offered); PLAIN too on the single broker.
- ``connections.max.reauth.ms``: 0 (default) or the session lifetime told to clients in
  SaslAuthenticate (KIP-368); a request after it, other than a re-authentication, closes
  the connection.

Users come from ``--users FILE`` (properties ``NAME=PASSWORD``) for the single broker; a
cluster's brokers read the SCRAM credentials where Kafka keeps them in ZooKeeper
(:mod:`coordspec.broker.cluster.scram_users`). As Kafka's ``SaslServerAuthenticator``, a
listener with SASL answers only ApiVersions and SaslHandshake before authentication and
closes the connection on any other request, and closes it after a failed SaslAuthenticate
(SASL_AUTHENTICATION_FAILED, with Kafka's message that does not say whether the user exists).
"""

from __future__ import annotations

import base64
import ssl
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import scramp

from coordspec.broker.errors import BrokerError
from coordspec.broker.wire.protocol import (
    API_VERSIONS_KEY,
    BadRequest,
    decode_request,
    peek_header,
    response_frame,
)
from coordspec.reference.properties import parse

SASL_HANDSHAKE, SASL_AUTHENTICATE = 17, 36
PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
SCRAM = ("SCRAM-SHA-256", "SCRAM-SHA-512")
ILLEGAL_SASL_STATE, UNSUPPORTED_SASL_MECHANISM, SASL_AUTHENTICATION_FAILED = 34, 33, 58
ITERATIONS = 4096  # Kafka's kafka-configs.sh default for SCRAM credentials
_KEYS = (
    "security.protocol",
    "ssl.keystore.location",
    "ssl.keystore.type",
    "ssl.key.password",
    "ssl.truststore.location",
    "ssl.truststore.type",
    "ssl.client.auth",
    "sasl.enabled.mechanisms",
    "connections.max.reauth.ms",
)


@dataclass(frozen=True)
class ScramCredential:
    """What a server keeps of a SCRAM password (RFC 5802), as Kafka's ScramCredential."""

    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int

    @classmethod
    def of_password(cls, mechanism: str, password: str) -> ScramCredential:
        return cls(*scramp.ScramMechanism(mechanism).make_auth_info(password, ITERATIONS))

    def __str__(self) -> str:
        """Kafka's text of a credential (ScramCredentialUtils), as ZooKeeper stores it."""
        b64 = base64.b64encode
        return (
            f"salt={b64(self.salt).decode()},stored_key={b64(self.stored_key).decode()},"
            f"server_key={b64(self.server_key).decode()},iterations={self.iterations}"
        )

    @classmethod
    def parse(cls, text: str) -> ScramCredential:
        fields = dict(item.split("=", 1) for item in text.split(",") if "=" in item)
        if set(fields) != {"salt", "stored_key", "server_key", "iterations"}:
            raise ValueError(f"not a SCRAM credential: {text!r}")
        return cls(
            base64.b64decode(fields["salt"]),
            base64.b64decode(fields["stored_key"]),
            base64.b64decode(fields["server_key"]),
            int(fields["iterations"]),
        )


# user, mechanism -> the user's credential for it, or None
ScramLookup = Callable[[str, str], Awaitable[ScramCredential | None]]


@dataclass(frozen=True)
class ListenerSecurity:
    protocol: str = "PLAINTEXT"
    ssl_context: ssl.SSLContext | None = None
    mechanisms: tuple[str, ...] = SCRAM
    reauth_ms: int = 0
    passwords: Mapping[str, str] = field(default_factory=dict)  # PLAIN's, from --users
    scram: ScramLookup | None = None

    @property
    def sasl(self) -> bool:
        return self.protocol.startswith("SASL_")

    @property
    def authenticates(self) -> bool:
        """Whether a client must prove who it is (SASL, or a required client certificate)."""
        return self.sasl or (
            self.ssl_context is not None and self.ssl_context.verify_mode == ssl.CERT_REQUIRED
        )

    def session(self) -> Session | None:
        return Session(self) if self.sasl else None


PLAINTEXT = ListenerSecurity()


def read_users(path: Path) -> dict[str, str]:
    """``NAME=PASSWORD`` lines of a properties file."""
    try:
        given = parse(path.read_text(encoding="utf-8"), f"--users {path}")
    except OSError as e:
        raise BrokerError(f"--users {path}: {e.strerror or e}") from None
    users = {g.key: g.value for g in given}
    if not users or not all(users.values()):
        raise BrokerError(f"--users {path}: expected NAME=PASSWORD lines")
    return users


def load(
    path: Path | None,
    users: Mapping[str, str] | None = None,
    scram: ScramLookup | None = None,
    offered: tuple[str, ...] = ("PLAIN", *SCRAM),
) -> ListenerSecurity:
    """The listener's security from ``--security-config`` ``path`` (None: plaintext).
    SCRAM credentials come from ``scram``, else are made from ``users``' passwords."""
    if path is None:
        if users:
            raise BrokerError("--users needs --security-config with a SASL security.protocol")
        return PLAINTEXT
    try:
        given = parse(path.read_text(encoding="latin-1"), f"--security-config {path}")
    except OSError as e:
        raise BrokerError(f"--security-config {path}: {e.strerror or e}") from None
    values = {}
    for g in given:
        if g.key not in _KEYS:
            raise BrokerError(
                f"{g.source} {g.key}: not a security setting coordspec takes ({', '.join(_KEYS)})"
            )
        values[g.key] = g.value.strip()
    protocol = values.get("security.protocol", "PLAINTEXT").upper()
    if protocol not in PROTOCOLS:
        raise BrokerError(f"security.protocol {protocol!r}: not one of {', '.join(PROTOCOLS)}")
    for kind in ("ssl.keystore.type", "ssl.truststore.type"):
        if values.get(kind, "PEM").upper() != "PEM":
            raise BrokerError(f"{kind}: coordspec reads PEM files only")
    context = _ssl_context(values) if protocol.endswith("SSL") else None
    mechanisms = tuple(
        m.strip().upper() for m in values.get("sasl.enabled.mechanisms", ",".join(SCRAM)).split(",")
    )
    if protocol.startswith("SASL_"):
        if unknown := [m for m in mechanisms if m not in offered]:
            raise BrokerError(
                f"sasl.enabled.mechanisms: {', '.join(unknown)} not offered "
                f"(this broker offers {', '.join(offered)})"
            )
        if scram is None and not users:
            raise BrokerError(f"security.protocol={protocol} needs users: --users FILE")
    try:
        reauth_ms = int(values.get("connections.max.reauth.ms", "0"))
    except ValueError:
        raise BrokerError("connections.max.reauth.ms: expected an integer") from None
    if scram is None:
        scram = _derived(users or {}, mechanisms)
    return ListenerSecurity(protocol, context, mechanisms, reauth_ms, dict(users or {}), scram)


def _derived(users: Mapping[str, str], mechanisms: tuple[str, ...]) -> ScramLookup:
    stored = {
        (user, m): ScramCredential.of_password(m, password)
        for user, password in users.items()
        for m in mechanisms
        if m in SCRAM
    }

    async def lookup(user: str, mechanism: str) -> ScramCredential | None:
        return stored.get((user, mechanism))

    return lookup


def _ssl_context(values: Mapping[str, str]) -> ssl.SSLContext:
    keystore = values.get("ssl.keystore.location")
    if not keystore:
        raise BrokerError("a TLS listener needs ssl.keystore.location (PEM: certificate and key)")
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    key, where = "ssl.keystore.location", keystore
    try:
        context.load_cert_chain(keystore, keystore, values.get("ssl.key.password") or None)
        if truststore := values.get("ssl.truststore.location"):
            key, where = "ssl.truststore.location", truststore
            context.load_verify_locations(truststore)
    except (OSError, ssl.SSLError) as e:
        if isinstance(e, ssl.SSLError):
            wanted = "certificates" if key == "ssl.truststore.location" else "certificate and key"
            reason = f"not a usable PEM {wanted} ({e.reason or e})"
        else:
            reason = e.strerror or str(e)
        raise BrokerError(f"{key} {where}: {reason}") from None
    auth = values.get("ssl.client.auth", "none").lower()
    modes = {"none": ssl.CERT_NONE, "requested": ssl.CERT_OPTIONAL, "required": ssl.CERT_REQUIRED}
    if auth not in modes:
        raise BrokerError(f"ssl.client.auth {auth!r}: expected none, requested or required")
    context.verify_mode = modes[auth]
    return context


Inner = Callable[[bytes], Awaitable[bytes | None]]


class Session:
    """One connection's SASL state, in front of the broker's dispatcher."""

    def __init__(self, security: ListenerSecurity) -> None:
        self.security = security
        self.handshake: str | None = None  # the mechanism of the exchange under way
        self.mechanism: str | None = None  # the one the session was authenticated with
        self.user: str | None = None  # once authenticated
        self._scram: Any = None  # scramp's server during a SCRAM exchange
        self._scram_user = ""  # the user that exchange is for
        self._expires: float | None = None  # monotonic time the session ends

    async def respond(self, frame: bytes, inner: Inner) -> bytes | None:
        header = peek_header(frame)
        if header.api_key == SASL_HANDSHAKE:
            return self._handshake(frame, header.api_version)
        if header.api_key == SASL_AUTHENTICATE and self.handshake is not None:
            return await self._authenticate(frame, header.api_version)
        if header.api_key == API_VERSIONS_KEY and self.user is None:
            return await inner(frame)
        if self.user is None:
            raise BadRequest(f"unexpected request {header.api_key} before SASL authentication")
        if self._expires is not None and time.monotonic() > self._expires:
            raise BadRequest(f"the SASL session of {self.user} expired")
        return await inner(frame)

    def _handshake(self, frame: bytes, version: int) -> bytes:
        header, body = decode_request(frame, SASL_HANDSHAKE, version)
        mechanism = body.mechanism.upper()
        offered = list(self.security.mechanisms)
        if mechanism not in offered or (self.user is not None and mechanism != self.mechanism):
            raise Refused(
                SASL_HANDSHAKE,
                version,
                header.correlation_id,
                {"error_code": UNSUPPORTED_SASL_MECHANISM, "mechanisms": offered},
            )
        self.handshake = mechanism
        return response_frame(
            SASL_HANDSHAKE, version, header.correlation_id, {"error_code": 0, "mechanisms": offered}
        )

    async def _authenticate(self, frame: bytes, version: int) -> bytes:
        header, body = decode_request(frame, SASL_AUTHENTICATE, version)
        assert self.handshake is not None
        try:
            user, reply = await self._step(bytes(body.auth_bytes))
        except (scramp.ScramException, ValueError, UnicodeDecodeError):
            raise Refused(
                SASL_AUTHENTICATE,
                version,
                header.correlation_id,
                {
                    "error_code": SASL_AUTHENTICATION_FAILED,
                    "error_message": "Authentication failed during authentication due to "
                    f"invalid credentials with SASL mechanism {self.handshake}",
                },
            ) from None
        lifetime_ms = 0
        if user is not None:
            if self.user is not None and user != self.user:
                raise BadRequest(f"re-authentication as {user}, not {self.user}")
            self.user, self.mechanism, self.handshake = user, self.handshake, None
            if self.security.reauth_ms > 0:
                lifetime_ms = self.security.reauth_ms
                self._expires = time.monotonic() + lifetime_ms / 1000
        return response_frame(
            SASL_AUTHENTICATE,
            version,
            header.correlation_id,
            {"error_code": 0, "auth_bytes": reply, "session_lifetime": lifetime_ms},
        )

    async def _step(self, data: bytes) -> tuple[str | None, bytes]:
        """The user once authenticated (else None), and the bytes to answer."""
        mechanism = self.handshake
        if mechanism == "PLAIN":
            _, user, password = data.decode().split("\0")
            if self.security.passwords.get(user) != password or not password:
                raise ValueError("invalid credentials")
            return user, b""
        assert mechanism is not None and self.security.scram is not None
        if self._scram is None:
            first = data.decode()
            user = _scram_user(first)
            credential = await self.security.scram(user, mechanism)
            if credential is None:
                raise ValueError("unknown user")
            info = (credential.salt, credential.stored_key, credential.server_key)
            self._scram = scramp.ScramMechanism(mechanism).make_server(
                lambda _: (*info, credential.iterations)
            )
            self._scram.set_client_first(first)
            self._scram_user = user
            return None, self._scram.get_server_first().encode()
        server, self._scram = self._scram, None
        server.set_client_final(data.decode())
        return self._scram_user, server.get_server_final().encode()


def _scram_user(client_first: str) -> str:
    """The saslname of a client-first message, unescaped (RFC 5802: =2C is ',', =3D '=')."""
    for part in client_first.split(",")[2:]:
        if part.startswith("n="):
            return part[2:].replace("=2C", ",").replace("=3D", "=")
    raise ValueError("no user in the SCRAM client-first message")


class Refused(BadRequest):
    """An error answer, after which the connection closes (as Kafka closes it)."""

    def __init__(self, api_key: int, version: int, correlation_id: int, values: dict) -> None:
        super().__init__(f"SASL refused: error {values['error_code']}")
        self.frame = response_frame(api_key, version, correlation_id, values)
