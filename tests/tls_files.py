"""Certificates for the TLS tests, made by the openssl command: a CA, a server certificate for
127.0.0.1 and localhost (with its key in one PEM file, as ``ssl.keystore.location`` takes
it), a client certificate, and a second CA that signed nothing the brokers use.

``make(directory)`` writes them and returns their paths; a test module calls it once."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class TlsFiles:
    ca: Path  # the CA that signed the server's and the client's certificates
    other_ca: Path  # a CA that signed neither
    server: Path  # certificate and key, PEM
    client_certificate: Path
    client_key: Path


def _openssl(*args: str | Path, cwd: Path) -> None:
    subprocess.run(["openssl", *map(str, args)], cwd=cwd, check=True, capture_output=True)


def _ca(directory: Path, name: str) -> None:
    _openssl(
        "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
        "-subj", f"/CN={name}", "-keyout", f"{name}.key", "-out", f"{name}.pem",
        cwd=directory,
    )  # fmt: skip


def _signed(directory: Path, name: str, ca: str, extensions: str) -> None:
    (directory / f"{name}.ext").write_text(extensions)
    _openssl(
        "req", "-newkey", "rsa:2048", "-nodes", "-subj", f"/CN={name}",
        "-keyout", f"{name}.key", "-out", f"{name}.csr",
        cwd=directory,
    )  # fmt: skip
    _openssl(
        "x509", "-req", "-in", f"{name}.csr", "-CA", f"{ca}.pem", "-CAkey", f"{ca}.key",
        "-CAcreateserial", "-days", "2", "-extfile", f"{name}.ext", "-out", f"{name}.pem",
        cwd=directory,
    )  # fmt: skip


def make(directory: Path) -> TlsFiles:
    directory.mkdir(parents=True, exist_ok=True)
    _ca(directory, "ca")
    _ca(directory, "other-ca")
    _signed(
        directory,
        "server",
        "ca",
        "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n",
    )
    _signed(directory, "client", "ca", "extendedKeyUsage=clientAuth\n")
    keystore = directory / "server-keystore.pem"
    keystore.write_text(
        (directory / "server.pem").read_text() + (directory / "server.key").read_text()
    )
    return TlsFiles(
        directory / "ca.pem",
        directory / "other-ca.pem",
        keystore,
        directory / "client.pem",
        directory / "client.key",
    )
