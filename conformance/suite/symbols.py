"""Symbolic values in scenarios, and what each client knows, as a real client would.

Reserved symbols: ``$group`` (this run's group id; ``$group-b`` appends ``-b``), ``$mN``
(the member id client cN was last given), ``$gen`` (the generation of the last successful
JoinGroup reply to any client), ``$genN`` (client cN's), and ``$_`` (anything, in an
expectation). Any other ``$name`` is bound by the first expectation that mentions it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_MEMBER = re.compile(r"^\$m([1-9][0-9]*)$")
_GENERATION = re.compile(r"^\$gen([1-9][0-9]*)$")
ANY = "$_"


class Unbound(LookupError):
    """A symbol used before it has a value; the message says which and why."""


@dataclass
class ClientState:
    """What a client learned from its replies; requests default to it."""

    name: str
    member_id: str = ""
    group_instance_id: str | None = None
    generation_id: int = -1
    protocol_name: str | None = None
    member_epoch: int = 0  # a consumer group member's (KIP-848); 0 until it has joined
    assigned: tuple[str, ...] = ()  # the partitions it was last told are its own, as foo-0


class Symbols:
    def __init__(self, group_id: str, clients: tuple[str, ...]) -> None:
        self.group_id = group_id
        self.clients = {name: ClientState(name) for name in clients}
        self.generation: int | None = None
        self.names: dict[str, object] = {}

    def is_reserved(self, symbol: str) -> bool:
        return (
            symbol.startswith("$group")
            or symbol in ("$gen", ANY)
            or bool(_MEMBER.match(symbol) or _GENERATION.match(symbol))
        )

    def is_bound(self, symbol: str) -> bool:
        try:
            self.value(symbol)
        except Unbound:
            return False
        return True

    def value(self, symbol: str) -> object:
        if symbol.startswith("$group"):
            return self.group_id + symbol.removeprefix("$group")
        if symbol == "$gen":
            if self.generation is None:
                raise Unbound("$gen has no value: no JoinGroup has succeeded yet")
            return self.generation
        if match := _MEMBER.match(symbol):
            client = self.client(f"c{match[1]}", symbol)
            if not client.member_id:
                raise Unbound(
                    f"{symbol} has no value: {client.name} has not been given a member id yet"
                )
            return client.member_id
        if match := _GENERATION.match(symbol):
            client = self.client(f"c{match[1]}", symbol)
            if client.generation_id < 0:
                raise Unbound(
                    f"{symbol} has no value: {client.name} has not joined a generation yet"
                )
            return client.generation_id
        if symbol == ANY:
            raise Unbound("$_ matches anything in an expectation; it has no value to send")
        if symbol not in self.names:
            raise Unbound(f"{symbol} has no value: no expectation has bound it yet")
        return self.names[symbol]

    def client(self, name: str, symbol: str) -> ClientState:
        if name not in self.clients:
            raise Unbound(f"{symbol} names client {name}, which the scenario does not list")
        return self.clients[name]

    def resolve(self, value: object) -> object:
        """``value`` with a symbol replaced by what it stands for."""
        if isinstance(value, str) and value.startswith("$"):
            return self.value(value)
        return value

    def bind(self, symbol: str, value: object) -> None:
        self.names[symbol] = value

    def describe(self, value: object) -> str:
        """A value as a report shows it: member ids with the symbol they are known by."""
        if isinstance(value, str):
            for name, client in self.clients.items():
                if value and value == client.member_id:
                    return f"{value} (${'m' + name[1:]})"
        return repr(value)
