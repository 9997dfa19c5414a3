"""The TLS and SASL options of the commands that connect to a broker (``conform`` and
``record``), named as Kafka's tools name them: conformance/security.py reads them."""

from __future__ import annotations

import argparse
from pathlib import Path


def add_arguments(parser: argparse.ArgumentParser, what: str) -> None:
    """``what``: the connections they are for, as the help says it."""
    parser.add_argument(
        "--command-config",
        type=Path,
        metavar="FILE",
        help=f"{what}: TLS and SASL settings as a Java properties file, by the Kafka clients' "
        "names (security.protocol, ssl.ca.location, sasl.mechanism, sasl.username, "
        "sasl.password, ...), as Kafka's tools take --command-config",
    )
    parser.add_argument(
        "--command-property",
        "--command-config-property",
        dest="command_property",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help=f"{what}: one such setting (repeatable, over --command-config)",
    )
