"""A websocket server on 127.0.0.1 with a test-supplied handler, run on a background thread.

Used to imitate misbehaving openpi servers (silent, malformed, dropping) in the client tests,
and under ``droid_openpi_server.DroidOpenpiServer``. It binds ``port`` (0: any free one), serves
until the ``with`` block ends or ``lifetime_s`` has passed, and never outlives the test that made
it.
"""

from __future__ import annotations

import asyncio
import threading

import websockets.asyncio.server as ws_server


class LoopbackWebsocketServer:
    """Run ``handler(connection)`` (an async function) for each websocket connection."""

    def __init__(self, handler, port: int = 0, lifetime_s: float = 60.0,
                 start_timeout_s: float = 5.0, label: str = 'loopback websocket server') -> None:
        self._handler = handler
        self.port = port
        self.connections = 0
        self._lifetime_s = lifetime_s
        self._start_timeout_s = start_timeout_s
        self._label = label
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._thread: threading.Thread | None = None

    async def _wrapped(self, connection) -> None:
        self.connections += 1
        await self._handler(connection)

    async def _run(self, ready: threading.Event | None) -> None:
        """Serve until stopped or ``lifetime_s`` is over (``ready`` is set once bound)."""
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        async with ws_server.serve(self._wrapped, '127.0.0.1', self.port, compression=None,
                                   max_size=None) as server:
            self.port = next(iter(server.sockets)).getsockname()[1]
            if ready is not None:
                ready.set()
            # Bounded: a test server never outlives its lifetime.
            try:
                await asyncio.wait_for(self._stop.wait(), timeout=self._lifetime_s)
            except asyncio.TimeoutError:
                pass

    def __enter__(self):
        ready = threading.Event()
        self._thread = threading.Thread(target=lambda: asyncio.run(self._run(ready)),
                                        daemon=True)
        self._thread.start()
        assert ready.wait(self._start_timeout_s), f'{self._label} did not start'
        return self

    def __exit__(self, *exc: object) -> None:
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        if self._thread is not None:
            self._thread.join(timeout=10.0)
