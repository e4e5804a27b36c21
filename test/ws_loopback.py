"""A websocket server on 127.0.0.1 with a test-supplied handler, run on a background thread.

Used to imitate misbehaving openpi servers (silent, malformed, dropping) in the client tests.
It binds port 0, serves until :meth:`stop`, and never outlives the test that made it.
"""

from __future__ import annotations

import asyncio
import threading

import websockets.asyncio.server as ws_server


class LoopbackWebsocketServer:
    """Run ``handler(connection)`` (an async function) for each websocket connection."""

    def __init__(self, handler) -> None:
        self._handler = handler
        self.port = 0
        self.connections = 0
        self._loop = None
        self._stop = None
        self._thread = None

    async def _wrapped(self, connection) -> None:
        self.connections += 1
        await self._handler(connection)

    async def _run(self, ready: threading.Event) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        async with ws_server.serve(self._wrapped, '127.0.0.1', 0, compression=None,
                                   max_size=None) as server:
            self.port = next(iter(server.sockets)).getsockname()[1]
            ready.set()
            # Bounded: a test server never lives longer than a minute.
            try:
                await asyncio.wait_for(self._stop.wait(), timeout=60.0)
            except asyncio.TimeoutError:
                pass

    def __enter__(self) -> LoopbackWebsocketServer:
        ready = threading.Event()
        self._thread = threading.Thread(target=lambda: asyncio.run(self._run(ready)),
                                        daemon=True)
        self._thread.start()
        assert ready.wait(5.0), 'loopback websocket server did not start'
        return self

    def __exit__(self, *exc) -> None:
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(timeout=10.0)
