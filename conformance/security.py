"""How the conformance client and the recording proxy reach a secured broker: TLS and SASL.

Settings come as Kafka's tools take them: ``--command-config FILE`` (a Java properties
file) with ``--command-config-property KEY=VALUE`` over it, by librdkafka's and the Java
client's names (:data:`KEYS`). Keys outside ``security.``, ``ssl.`` and ``sasl.`` are
left alone (a file written for ``kafka-console-consumer`` also carries ``client.id`` and
such); a security key coordspec does not take is an error.

TLS is Python's ``ssl``: the system's CAs or ``ssl.ca.location``, hostname verification on
unless ``ssl.endpoint.identification.algorithm`` is ``none`` (or empty, the Java spelling),
an optional client certificate. SASL is PLAIN or SCRAM-SHA-256/512 (``scramp`` does SCRAM);
this module writes only Kafka's framing of it: SaslHandshake v1, then SaslAuthenticate
(KIP-152), whose ``session_lifetime_ms`` (KIP-368) the caller re-authenticates before.

Fault hooks get the settings in their environment (:meth:`ClientSecurity.environment`):
``COORDSPEC_`` and the key in capitals with ``_`` for ``.``, for each key given
(``COORDSPEC_SECURITY_PROTOCOL``, ``COORDSPEC_SASL_USERNAME``, ``COORDSPEC_SSL_CA_LOCATION``…).
"""

from __future__ import annotations

import re
import ssl
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from coordspec.reference.properties import Given, SettingsError, pairs, parse
from coordspec.reference.wire.entities import ms

SASL_HANDSHAKE, SASL_AUTHENTICATE = 17, 36
PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
KEYS = {
    "security.protocol": "PLAINTEXT (default), SSL, SASL_PLAINTEXT or SASL_SSL",
    "ssl.ca.location": "PEM file of the CAs to trust (default: the system's)",
    "ssl.truststore.location": "as ssl.ca.location, if PEM (Java's name)",
    "ssl.truststore.type": "PEM only",
    "ssl.certificate.location": "PEM file of the client's certificate",
    "ssl.key.location": "PEM file of the client's private key",
    "ssl.keystore.location": "PEM file with the client's certificate and key (Java's name)",
    "ssl.keystore.type": "PEM only",
    "ssl.key.password": "the private key's password",
    "ssl.endpoint.identification.algorithm": "https (default: verify the host name) or none",
    "sasl.mechanism": "PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512",
    "sasl.mechanisms": "librdkafka's name of sasl.mechanism",
    "sasl.username": "the SASL user",
    "sasl.password": "the SASL user's password",
    "sasl.jaas.config": 'Java\'s: username="…" password="…" are taken from it',
}
_JAAS = re.compile(r'\b(username|password)\s*=\s*"((?:[^"\\]|\\.)*)"')
ILLEGAL_SASL_STATE = 34


class SecurityError(Exception):
    """Settings that cannot be used, or an authentication that failed; one line."""


@dataclass(frozen=True)
class ClientSecurity:
    protocol: str = "PLAINTEXT"
    ca: Path | None = None
    certificate: Path | None = None
    key: Path | None = None
    key_password: str | None = None
    verify_hostname: bool = True
    mechanism: str | None = None
    username: str | None = None
    password: str | None = None
    given: tuple[tuple[str, str], ...] = ()  # the security keys as given, for fault hooks

    @property
    def tls(self) -> bool:
        return self.protocol in ("SSL", "SASL_SSL")

    @property
    def sasl(self) -> bool:
        return self.protocol.startswith("SASL_")

    def ssl_context(self) -> ssl.SSLContext | None:
        """The client's TLS context, or None for a plaintext protocol."""
        if not self.tls:
            return None
        try:
            context = ssl.create_default_context(cafile=self.ca)
            if self.certificate is not None:
                context.load_cert_chain(self.certificate, self.key, self.key_password)
        except (OSError, ssl.SSLError) as exc:
            raise SecurityError(f"TLS settings: {_reason(exc)}") from None
        context.check_hostname = self.verify_hostname
        return context

    def environment(self) -> dict[str, str]:
        """The settings for a fault hook's environment (see the module docstring)."""
        return {"COORDSPEC_" + k.upper().replace(".", "_"): v for k, v in self.given}


PLAINTEXT = ClientSecurity()


def load(path: Path | None, properties: Sequence[str] = ()) -> ClientSecurity:
    """The settings of ``--command-config`` ``path`` with each ``--command-config-property`` over it."""
    given: list[Given] = []
    try:
        if path is not None:
            try:
                text = path.read_text(encoding="latin-1")
            except OSError as exc:
                raise SecurityError(f"--command-config {path}: {exc.strerror or exc}") from None
            given += parse(text, f"--command-config {path}")
        given += pairs(properties, "--command-config-property")
    except SettingsError as exc:
        raise SecurityError(str(exc)) from None
    return from_given(given)


def from_given(given: Sequence[Given]) -> ClientSecurity:
    values: dict[str, str] = {}
    sources: dict[str, str] = {}
    for g in given:
        if not g.key.startswith(("security.", "ssl.", "sasl.")):
            continue  # another client setting: not coordspec's business
        if g.key not in KEYS:
            raise SecurityError(
                f"{g.source} {g.key}: not a security setting coordspec takes ({', '.join(KEYS)})"
            )
        values[g.key], sources[g.key] = g.value.strip(), g.source
    if "sasl.mechanisms" in values:
        values.setdefault("sasl.mechanism", values.pop("sasl.mechanisms"))
    if "sasl.jaas.config" in values:
        for name, value in _JAAS.findall(values.pop("sasl.jaas.config")):
            values.setdefault(f"sasl.{name}", re.sub(r"\\(.)", r"\1", value))

    def where(key: str) -> str:
        return f"{sources.get(key, '')} {key}".strip()

    protocol = values.get("security.protocol", "PLAINTEXT").upper()
    if protocol not in PROTOCOLS:
        raise SecurityError(
            f"{where('security.protocol')}: {protocol!r} is not one of {', '.join(PROTOCOLS)}"
        )
    for kind in ("ssl.truststore.type", "ssl.keystore.type"):
        if values.get(kind, "PEM").upper() != "PEM":
            raise SecurityError(f"{where(kind)}: coordspec reads PEM files only")
    ca = _pem(values, "ssl.ca.location", where) or _pem(values, "ssl.truststore.location", where)
    certificate = _pem(values, "ssl.certificate.location", where)
    key = _pem(values, "ssl.key.location", where)
    if keystore := _pem(values, "ssl.keystore.location", where):
        certificate, key = certificate or keystore, key or keystore
    if key is not None and certificate is None:
        raise SecurityError(f"{where('ssl.key.location')}: needs ssl.certificate.location")
    identification = values.get("ssl.endpoint.identification.algorithm", "https").lower()
    if identification not in ("https", "none", ""):
        raise SecurityError(
            f"{where('ssl.endpoint.identification.algorithm')}: expected https or none, "
            f"got {identification!r}"
        )
    mechanism = values.get("sasl.mechanism", "").upper() or None
    if protocol.startswith("SASL_"):
        if mechanism not in MECHANISMS:
            raise SecurityError(
                f"security.protocol={protocol} needs sasl.mechanism "
                f"{' or '.join(MECHANISMS)}" + (f", got {mechanism!r}" if mechanism else "")
            )
        for needed in ("sasl.username", "sasl.password"):
            if not values.get(needed):
                raise SecurityError(f"security.protocol={protocol} needs {needed}")
    return ClientSecurity(
        protocol=protocol,
        ca=ca,
        certificate=certificate,
        key=key,
        key_password=values.get("ssl.key.password") or None,
        verify_hostname=identification == "https",
        mechanism=mechanism,
        username=values.get("sasl.username"),
        password=values.get("sasl.password"),
        given=tuple(sorted(values.items())),
    )


def _pem(values: dict[str, str], key: str, where: Callable[[str], str]) -> Path | None:
    if not values.get(key):
        return None
    path = Path(values[key]).expanduser()
    try:
        head = path.read_bytes()[:4096]
    except OSError as exc:
        raise SecurityError(f"{where(key)}: {path}: {exc.strerror or exc}") from None
    if b"-----BEGIN " not in head:
        raise SecurityError(
            f"{where(key)}: {path} is not a PEM file (coordspec reads PEM only: "
            "keytool -exportcert -rfc or openssl pkcs12 -nodes converts a JKS or PKCS#12 store)"
        )
    return path


def _reason(exc: BaseException) -> str:
    if isinstance(exc, ssl.SSLError):
        return exc.reason or str(exc)
    if isinstance(exc, OSError) and exc.strerror:
        return f"{exc.filename}: {exc.strerror}" if exc.filename else exc.strerror
    return str(exc)


Call = Callable[[int, int, dict[str, Any]], Awaitable[Any]]


async def authenticate(
    call: Call, versions: dict[int, range], security: ClientSecurity, address: str
) -> int:
    """SASL over a connection that negotiated ``versions``: SaslHandshake v1, then
    SaslAuthenticate at the newest version both sides know. The broker's session lifetime in
    ms (0: none), after which it closes the connection unless it re-authenticated."""
    import scramp

    assert security.mechanism is not None and security.username is not None
    mechanism, user = security.mechanism, security.username
    if 1 not in versions.get(SASL_HANDSHAKE, range(0)) or not versions.get(SASL_AUTHENTICATE):
        raise SecurityError(f"{address} does not serve SaslHandshake v1 and SaslAuthenticate")
    handshake = await call(SASL_HANDSHAKE, 1, {"mechanism": mechanism})
    if int(handshake.error_code) == ILLEGAL_SASL_STATE:
        raise SecurityError(
            f"{address} takes no SASL (ILLEGAL_SASL_STATE): set security.protocol=SSL or PLAINTEXT"
        )
    if int(handshake.error_code) != 0:
        offered = ", ".join(handshake.mechanisms) or "none"
        raise SecurityError(
            f"{address} does not enable SASL mechanism {mechanism} (it enables {offered})"
        )
    version = min(2, versions[SASL_AUTHENTICATE].stop - 1)

    async def step(data: bytes) -> Any:
        answer = await call(SASL_AUTHENTICATE, version, {"auth_bytes": data})
        if int(answer.error_code) != 0:
            raise SecurityError(
                f"authentication failed for user {user} with {mechanism}: "
                f"{answer.error_message or f'error {int(answer.error_code)}'}"
            )
        return answer

    if mechanism == "PLAIN":
        answer = await step(f"\0{user}\0{security.password}".encode())
    else:
        scram = scramp.ScramClient([mechanism], user, security.password)
        first = await step(scram.get_client_first().encode())
        try:
            scram.set_server_first(first.auth_bytes.decode())
            answer = await step(scram.get_client_final().encode())
            scram.set_server_final(answer.auth_bytes.decode())
        except (scramp.ScramException, UnicodeDecodeError) as exc:
            raise SecurityError(
                f"authentication failed for user {user} with {mechanism}: the broker's "
                f"answer does not verify ({exc})"
            ) from None
    return max(0, ms(getattr(answer, "session_lifetime", 0)))
