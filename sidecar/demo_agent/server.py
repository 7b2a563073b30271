"""Serve the demo agent on stdin/stdout until EOF, a signal, or a scripted crash."""

from __future__ import annotations

import asyncio
import contextlib
import signal

from sidecar.demo_agent.agent import DemoAgent
from sidecar.demo_agent.handlers import Handlers
from sidecar.demo_agent.protocol import Connection, Stdio, log
from sidecar.demo_agent.settings import Settings
from sidecar.demo_agent.store import Store


async def serve(settings: Settings, store: Store) -> int:
    """Run the agent; returns the process exit code."""
    io = Stdio()
    await io.open()
    agent = DemoAgent(settings, store)
    handlers = Handlers(agent)
    conn = Connection(io, handlers.handle_request, handlers.handle_notification)
    agent.conn = conn
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(signum, agent.stop, 0)
    reader = asyncio.create_task(conn.run())
    stopped = asyncio.create_task(agent.stopped.wait())
    lost = asyncio.create_task(io.lost.wait())
    await asyncio.wait({reader, stopped, lost}, return_when=asyncio.FIRST_COMPLETED)
    code = agent.exit_code
    if reader.done() and not reader.cancelled() and reader.exception() is not None:
        log(f"reader failed: {reader.exception()!r}")
        code = 1
    eof = reader.done() and not agent.stopped.is_set()
    for task in (reader, stopped, lost):
        task.cancel()
    await conn.shutdown(grace_s=0.2 if eof else 0.0)
    for session in agent.sessions.values():
        agent.save(session)
    await io.flush(2.0)
    return code
