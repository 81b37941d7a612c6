"""The one connection ``memmy-kb mcp`` asks the desktop service on: the proof and the request after it.

A proof (``desktop/proof.py``) holds for the connection it came on. httpx's own transport keeps a pool:
when the service closes the connection after the proof (a service that stops just then does), the
request that carries the hook token and the query would go out on a new connection, to whoever holds the
port by then. ``ProvenConnection`` is an httpx transport on a single httpcore connection that is never
opened again: once it is closed, a request fails with ``ConnectionClosed`` and nothing is sent.
"""

from __future__ import annotations

import httpcore
import httpx

HOST = "127.0.0.1"


class ConnectionClosed(httpx.TransportError):
    """The connection the listener proved itself on was closed: the request was not sent."""


class ProvenConnection(httpx.AsyncBaseTransport):
    """Every request on one connection to 127.0.0.1:``port``, opened by the first and never reopened."""

    def __init__(self, port: int) -> None:
        self._origin = httpcore.Origin(b"http", HOST.encode("ascii"), port)
        self._connection = httpcore.AsyncHTTPConnection(self._origin)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        core = httpcore.Request(
            request.method,
            httpcore.URL(
                scheme=self._origin.scheme,
                host=self._origin.host,
                port=self._origin.port,
                target=request.url.raw_path,
            ),
            headers=request.headers.raw,
            content=await request.aread(),
            extensions=request.extensions,
        )
        try:
            response = await self._connection.handle_async_request(core)
            try:
                body = await response.aread()
            finally:
                await response.aclose()
        except httpcore.ConnectionNotAvailable as err:
            raise ConnectionClosed("the connection was closed", request=request) from err
        except httpcore.TimeoutException as err:
            raise httpx.TimeoutException(str(err), request=request) from err
        except (httpcore.NetworkError, httpcore.ProtocolError) as err:
            raise httpx.TransportError(str(err) or type(err).__name__, request=request) from err
        return httpx.Response(response.status, headers=response.headers, content=body, request=request)

    async def aclose(self) -> None:
        await self._connection.aclose()
