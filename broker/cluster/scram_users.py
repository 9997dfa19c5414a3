"""SCRAM credentials kept in ZooKeeper as Kafka keeps them (Kafka 3.9, ZooKeeper mode).

A user's node is ``/config/users/<user, URL-encoded>`` holding
``{"version":1,"config":{"SCRAM-SHA-512":"salt=…,stored_key=…,server_key=…,iterations=…"}}``
(``ConfigEntityZNode``, ``ScramCredentialUtils``); writing it is followed by a change
notification ``/config/changes/config_change_<seq>`` with ``{"version":2,"entity_path":"users/<user>"}``,
as ``kafka-configs.sh --alter --add-config 'SCRAM-SHA-512=[password=…]'`` does. coordspec's
brokers read the node at each authentication rather than caching it, so they need no
notification; it is written for any Kafka tool that watches.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Mapping
from urllib.parse import quote

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from coordspec.broker.security import SCRAM, ScramCredential, ScramLookup

USERS = "/config/users"
CHANGES = "/config/changes/config_change_"


def user_path(user: str) -> str:
    """Kafka's Sanitizer: URL-encoding, with a space as %20 and * as %2A."""
    return f"{USERS}/{quote(user, safe='-._').replace('~', '%7E')}"


def store(client: KazooClient, passwords: Mapping[str, str]) -> None:
    """Each user's SCRAM-SHA-256 and SCRAM-SHA-512 credentials, made from the password."""
    for user, password in passwords.items():
        config = {m: str(ScramCredential.of_password(m, password)) for m in SCRAM}
        data = json.dumps({"version": 1, "config": config}).encode()
        path = user_path(user)
        if client.exists(path):
            client.set(path, data)
        else:
            client.create(path, data, makepath=True)
        entity = path.removeprefix("/config/")
        client.create(
            CHANGES,
            json.dumps({"version": 2, "entity_path": entity}).encode(),
            sequence=True,
            makepath=True,
        )


def lookup(client: Callable[[], KazooClient]) -> ScramLookup:
    """Credentials read from ZooKeeper through the broker's session (``client()``)."""

    async def credential(user: str, mechanism: str) -> ScramCredential | None:
        try:
            data, _ = await asyncio.to_thread(client().get, user_path(user))
        except NoNodeError:
            return None
        text = json.loads(data or b"{}").get("config", {}).get(mechanism)
        return None if text is None else ScramCredential.parse(text)

    return credential
