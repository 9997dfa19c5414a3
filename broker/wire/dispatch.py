"""One request frame in, one response frame (or none) out: the front door of both brokers.

As in Kafka, a request the broker cannot read (too short, an unknown API key, a version
outside the advertised range, a body that does not decode) closes the connection; the
exception is ApiVersions at a version above the range, answered in v0's shape with
UNSUPPORTED_VERSION so the client can retry at a version both know (KIP-511).

The single broker answers every frame from its API table. A cluster broker also takes
requests of its own from the other brokers, in keys Kafka does not use; it passes an
``internal`` hook, which sees each frame first (:mod:`coordspec.broker.cluster.server`).
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import Any

from coordspec.broker.apis import api_versions
from coordspec.broker.apis.registry import Api
from coordspec.broker.context import Client
from coordspec.broker.wire.protocol import (
    API_VERSIONS_KEY,
    BadRequest,
    Header,
    decode_request,
    peek_header,
    response_frame,
)

# The answer to a frame that is not for the API table, or None to serve it from the table
# once the hook has returned.
Internal = Callable[[Header, bytes], Awaitable[bytes | None]]


async def respond(
    apis: dict[int, Api],
    ctx: Any,
    peer: tuple[str, int],
    payload: bytes,
    internal: Internal | None = None,
) -> bytes | None:
    header = peek_header(payload)
    if internal is not None and (answer := await internal(header, payload)) is not None:
        return answer
    api_key, api_version = header.api_key, header.api_version
    api = apis.get(api_key)
    if api is None:
        raise BadRequest(f"unknown API key {api_key}")
    if api_key == API_VERSIONS_KEY and api_version >= api.versions.stop:
        values = api_versions.unsupported(apis)
        return response_frame(API_VERSIONS_KEY, 0, header.correlation_id, values)
    if api_version not in api.versions:
        raise BadRequest(
            f"{api.name} v{api_version} is not supported (v{api.versions.start}-v{api.versions.stop - 1})"
        )
    full, body = decode_request(payload, api_key, api_version)
    values = await api.handler(
        ctx, _client(full.client_id or "", peer[0], peer[1]), api_version, body
    )
    if values is None:
        return None
    return response_frame(api_key, api_version, header.correlation_id, values)


@functools.lru_cache(maxsize=4096)
def _client(client_id: str, host: str, port: int) -> Client:
    """One Client per connection and client id (they are frozen), not one per request."""
    return Client(client_id, f"/{host}", port)
