"""An in-memory agent connection for engine unit tests: no subprocess, answers the test controls.

`FakeAgents` is the `connect` argument of `compose`; each (re)start makes a
`FakeAgent`. Calls the engine makes are recorded; the ones a test wants to hold
(start-up, session/new, resume, load, prompt) wait on gates and futures the test
opens or answers. `Recorder` is the editor side: every event, in order.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sidecar.acp import AgentDescription, ClientHandler, ConnectionClosed
from sidecar.acp.process import StderrRing
from sidecar.composition import compose
from sidecar.features.conversation.api import DocumentChange
from sidecar.features.conversation.conversations import Conversations
from sidecar.features.conversation.feature import Documents
from sidecar.features.edits.feature import Edits
from sidecar.features.edits.fs_service import FileService
from sidecar.features.edits.permissions import Permissions
from sidecar.features.titles.feature import Titles
from sidecar.features.titles.titling import Titling
from sidecar.kernel.agent_supervisor import AgentSupervisor
from sidecar.kernel.agents import Agents
from sidecar.kernel.bus import EventBus
from sidecar.kernel.kernel import Kernel
from sidecar.kernel.options import EngineOptions
from sidecar.kernel.session import PermissionRequest
from sidecar.kernel.sessions import Sessions
from sidecar.kernel.updates import Routed

JsonObj = dict[str, Any]

FULL_CAPS: JsonObj = {
    "loadSession": True,
    "promptCapabilities": {"embeddedContext": True},
    "sessionCapabilities": {"resume": {}, "list": {}, "close": {}},
}


async def until(condition: Callable[[], bool], timeout: float = 5.0, what: str = "condition") -> None:
    """Wait for a condition the event loop will make true; generous timeout, no fixed sleeps."""
    try:
        async with asyncio.timeout(timeout):
            while not condition():
                await asyncio.sleep(0.001)
    except TimeoutError:
        raise AssertionError(f"timed out after {timeout} s waiting for {what}") from None


class Gate:
    """Open by default; `close()` makes the next waiters wait until `open()`."""

    def __init__(self) -> None:
        self._event = asyncio.Event()
        self._event.set()
        self.waiting = 0

    def close(self) -> None:
        self._event.clear()

    def open(self) -> None:
        self._event.set()

    async def passage(self) -> None:
        self.waiting += 1
        try:
            await self._event.wait()
        finally:
            self.waiting -= 1


@dataclass
class PromptCall:
    session_id: str
    blocks: list[JsonObj]
    meta: JsonObj | None
    answer: asyncio.Future[JsonObj]

    @property
    def text(self) -> str:
        return "".join(b.get("text", "") for b in self.blocks if b.get("type") == "text")

    def finish(self, stop: str = "end_turn") -> None:
        if not self.answer.done():
            self.answer.set_result({"stopReason": stop})


class FakeProcess:
    def __init__(self) -> None:
        self.returncode: int | None = None
        self.stderr = StderrRing()  # the real ring: only the process is faked
        self.exited = asyncio.Event()

    async def wait(self) -> int:
        await self.exited.wait()
        assert self.returncode is not None
        return self.returncode

    def kill_now(self) -> None:
        self.exit(-9)

    def exit(self, code: int) -> None:
        if self.returncode is None:
            self.returncode = code
        self.exited.set()


@dataclass
class FakeAgents:
    """The test's control panel over every agent the engine starts."""

    capabilities: JsonObj = field(default_factory=lambda: dict(FULL_CAPS))
    start_gate: Gate = field(default_factory=Gate)
    new_gate: Gate = field(default_factory=Gate)
    attach_gate: Gate = field(default_factory=Gate)
    # Updates the agent sends before it answers session/new, session/resume or session/load.
    before_new: list[JsonObj] = field(default_factory=list)
    # Sent right after the session/new answer, while the sidecar is still setting the session up.
    after_new: list[JsonObj] = field(default_factory=list)
    before_attach: list[JsonObj] = field(default_factory=list)
    # session/cancel stops the prompt at once (else the test answers the prompt itself).
    cancel_stops: bool = True
    # session/set_title (offered with "title" in sessionCapabilities): waits at the gate, then
    # answers this (None: the title as asked; a string: that title; an exception: raised).
    title_gate: Gate = field(default_factory=Gate)
    title_answer: str | Exception | None = None
    agents: list[FakeAgent] = field(default_factory=list)
    prompts: list[PromptCall] = field(default_factory=list)
    calls: list[tuple[Any, ...]] = field(default_factory=list)
    known_sessions: set[str] = field(default_factory=set)
    _ids: Any = field(default_factory=lambda: itertools.count(1))

    def __call__(
        self,
        command: Sequence[str],
        handler: ClientHandler,
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        on_stderr_line: Callable[[str], None] | None = None,
        request_timeout: float = 60.0,
    ) -> FakeAgent:
        agent = FakeAgent(self, handler)
        self.agents.append(agent)
        return agent

    @property
    def current(self) -> FakeAgent:
        return self.agents[-1]

    def called(self, method: str) -> list[tuple[Any, ...]]:
        return [c for c in self.calls if c[0] == method]

    async def next_prompt(self, index: int | None = None, timeout: float = 5.0) -> PromptCall:
        """The prompt with this index (default: the next one not seen yet by this helper)."""
        wanted = len(self.prompts) if index is None else index
        await until(lambda: len(self.prompts) > wanted, timeout, "a prompt")
        return self.prompts[wanted]

    def new_session_id(self) -> str:
        return f"s{next(self._ids)}"


class FakeAgent:
    """One agent 'process': an AgentConnection whose answers FakeAgents controls."""

    def __init__(self, control: FakeAgents, handler: ClientHandler) -> None:
        self.control = control
        self.handler = handler
        self.process = FakeProcess()
        self.started = False
        self._closed = asyncio.Event()
        self.tasks: set[asyncio.Future[None]] = set()

    # ------------------------------------------------------------------ life
    @property
    def running(self) -> bool:
        return self.started and not self._closed.is_set()

    async def start(self) -> None:
        await self.control.start_gate.passage()
        self.started = True

    async def wait_closed(self) -> None:
        await self._closed.wait()

    async def stop(self, grace: float = 2.0) -> int | None:
        self.die(0)
        return self.process.returncode

    def die(self, code: int = 3, stderr: str | None = None) -> None:
        """The process exits: every call in flight fails, as a closed connection does."""
        if stderr is not None:
            self.process.stderr.add(stderr)
        self.process.exit(code)
        self._closed.set()
        for call in self.control.prompts:
            if not call.answer.done():
                call.answer.set_exception(ConnectionClosed("the agent connection is closed"))

    def _check(self) -> None:
        if not self.running:
            raise ConnectionClosed("the agent is not running")

    # ------------------------------------------------------------------ agent -> client
    async def send_update(self, session_id: str, update: JsonObj) -> None:
        self.handler.notify("session/update", {"sessionId": session_id, "update": update})

    async def ask_permission(
        self, session_id: str, kind: str = "edit", options: list[JsonObj] | None = None
    ) -> JsonObj:
        return await self.handler.request(
            "session/request_permission",
            {
                "sessionId": session_id,
                "toolCall": {"toolCallId": "call-1", "title": f"{kind} a file", "kind": kind},
                "options": options
                if options is not None
                else [
                    {"optionId": "yes", "name": "Allow", "kind": "allow_once"},
                    {"optionId": "no", "name": "Reject", "kind": "reject_once"},
                ],
            },
        )

    # ------------------------------------------------------------------ client -> agent
    async def initialize(self) -> AgentDescription:
        self._check()
        self.control.calls.append(("initialize",))
        return AgentDescription(
            1, dict(self.control.capabilities), [], {"name": "fake-agent", "version": "1"}
        )

    async def authenticate(self, method_id: str) -> JsonObj:
        self._check()
        self.control.calls.append(("authenticate", method_id))
        return {}

    async def logout(self) -> JsonObj:
        self._check()
        self.control.calls.append(("logout",))
        return {}

    async def _updates_before_answer(self, session_id: str, updates: list[JsonObj]) -> None:
        for update in updates:
            await self.send_update(session_id, update)

    async def new_session(self, cwd: str, additional: Sequence[str] = ()) -> JsonObj:
        self._check()
        session_id = self.control.new_session_id()
        self.control.calls.append(("session/new", cwd))
        await self._updates_before_answer(session_id, self.control.before_new)
        await self.control.new_gate.passage()
        self._check()
        self.control.known_sessions.add(session_id)
        if self.control.after_new:
            self.tasks.add(
                asyncio.ensure_future(self._updates_before_answer(session_id, self.control.after_new))
            )
        return {
            "sessionId": session_id,
            "modes": {
                "currentModeId": "ask",
                "availableModes": [{"id": "ask", "name": "Ask"}, {"id": "code", "name": "Code"}],
            },
        }

    async def _attach(self, method: str, session_id: str, cwd: str) -> JsonObj:
        self._check()
        self.control.calls.append((method, session_id, cwd))
        await self._updates_before_answer(session_id, self.control.before_attach)
        await self.control.attach_gate.passage()
        self._check()
        if session_id not in self.control.known_sessions:
            from sidecar.acp import RemoteError

            raise RemoteError(-32002, f"session {session_id} not found")
        return {}

    async def load_session(self, session_id: str, cwd: str, additional: Sequence[str] = ()) -> JsonObj:
        return await self._attach("session/load", session_id, cwd)

    async def resume_session(self, session_id: str, cwd: str, additional: Sequence[str] = ()) -> JsonObj:
        return await self._attach("session/resume", session_id, cwd)

    async def close_session(self, session_id: str) -> None:
        self.control.calls.append(("session/close", session_id))

    async def list_sessions(self, cwd: str | None = None) -> tuple[list[JsonObj], bool]:
        self._check()
        self.control.calls.append(("session/list", cwd))
        return [], True

    async def prompt(self, session_id: str, blocks: list[JsonObj], meta: JsonObj | None = None) -> JsonObj:
        self._check()
        self.control.calls.append(("session/prompt", session_id))
        call = PromptCall(session_id, blocks, meta, asyncio.get_running_loop().create_future())
        self.control.prompts.append(call)
        return await call.answer

    async def cancel(self, session_id: str) -> None:
        self._check()
        self.control.calls.append(("session/cancel", session_id))
        if self.control.cancel_stops:
            for call in self.control.prompts:
                if call.session_id == session_id:
                    call.finish("cancelled")

    async def set_mode(self, session_id: str, mode_id: str) -> JsonObj:
        self._check()
        self.control.calls.append(("session/set_mode", session_id, mode_id))
        return {}

    async def set_config_option(self, session_id: str, config_id: str, value: Any) -> JsonObj:
        self._check()
        self.control.calls.append(("session/set_config_option", session_id, config_id, value))
        return {"configOptions": []}

    async def set_model_legacy(self, session_id: str, model_id: str) -> JsonObj:
        self._check()
        self.control.calls.append(("session/set_model", session_id, model_id))
        return {}

    async def set_title(self, session_id: str, title: str) -> str:
        """`session/set_title`: `title_answer` (an error is raised, a string is the stored title)."""
        self._check()
        self.control.calls.append(("session/set_title", session_id, title))
        await self.control.title_gate.passage()
        answer = self.control.title_answer
        if isinstance(answer, Exception):
            raise answer
        return title if answer is None else answer


class Recorder:
    """The editor side of the engine: every event in order, and buffers it may serve files from."""

    def __init__(self) -> None:
        self.events: list[tuple[str, Any]] = []
        self.documents: dict[Path, str] = {}
        self.editor_writes: list[tuple[Path, str]] = []
        self.editor_applies = False
        self.permission_requests: list[PermissionRequest] = []

    # EngineListener
    def on_session_update(self, routed: Routed) -> None:
        self.events.append(
            (
                "update",
                {
                    "sessionId": routed.session_id,
                    "turnId": routed.turn_id,
                    "replay": routed.replay,
                    "update": routed.update.raw,
                },
            )
        )

    def on_turn(
        self,
        session_id: str,
        turn_id: str,
        state: str,
        stop_reason: str | None,
        error: JsonObj | None,
        answered: bool | None = None,
    ) -> None:
        self.events.append(
            (
                "turn",
                {
                    "sessionId": session_id,
                    "turnId": turn_id,
                    "state": state,
                    "stopReason": stop_reason,
                    "error": error,
                }
                | ({} if answered is None else {"answered": answered}),
            )
        )

    def on_status(self, status: JsonObj) -> None:
        self.events.append(("status", status))

    def on_session_info(self, info: JsonObj) -> None:
        self.events.append(("info", info))

    def on_permission(self, request: PermissionRequest) -> None:
        self.permission_requests.append(request)
        self.events.append(("permission", request))

    def on_log(self, level: str, message: str) -> None:
        self.events.append(("log", (level, message)))

    def on_error(self, message: str) -> None:
        self.events.append(("error", message))

    def on_conversation_change(
        self, session_id: str, uri: str, change: DocumentChange, at_once: bool = False
    ) -> None:
        self.events.append(("transcript", (session_id, uri, change)))

    def on_terminal(self, session_id: str, info: dict[str, Any]) -> None:
        self.events.append(("terminal", (session_id, info)))

    # EditorFiles
    def open_document_text(self, path: Path) -> str | None:
        return self.documents.get(path)

    async def write_via_editor(self, path: Path, content: str) -> bool:
        self.editor_writes.append((path, content))
        return self.editor_applies

    # reading what happened
    def of(self, kind: str) -> list[Any]:
        return [payload for k, payload in self.events if k == kind]

    def turns(self, turn_id: str) -> list[JsonObj]:
        return [t for t in self.of("turn") if t["turnId"] == turn_id]

    def ended(self, turn_id: str) -> list[JsonObj]:
        return [t for t in self.turns(turn_id) if t["state"] == "ended"]

    def updates(self, session_id: str | None = None) -> list[JsonObj]:
        return [u for u in self.of("update") if session_id is None or u["sessionId"] == session_id]

    def texts(self, session_id: str | None = None) -> list[str]:
        return [
            u["update"]["content"]["text"]
            for u in self.updates(session_id)
            if isinstance(u["update"].get("content"), dict)
        ]


class Composed:
    """The composed kernel as the unit tests reach into it: its parts and features by name."""

    def __init__(self, kernel: Kernel) -> None:
        self.kernel = kernel
        self.bus: EventBus = kernel.bus
        self.agents: Agents = kernel.agents
        self.registry: Sessions = kernel.registry
        self.title_feature = kernel.feature(Titles)
        self.titles: Titling = self.title_feature.titling
        self.conversations: Conversations = kernel.feature(Documents).conversations
        edits = kernel.feature(Edits)
        self.fs: FileService = edits.fs
        self.permissions: Permissions = edits.permissions

    @property
    def supervisor(self) -> AgentSupervisor:
        return self.agents.default

    async def start(self) -> None:
        await self.kernel.start()

    async def shutdown(self) -> None:
        await self.kernel.shutdown()


def make_engine(state_dir: Path, agents: FakeAgents, recorder: Recorder, **options: Any) -> Composed:
    kernel = compose(
        EngineOptions(agent_command=["fake-agent"], state_dir=state_dir, **options),
        recorder,
        recorder,
        connect=agents,
    )
    return Composed(kernel)


async def settle(rounds: int = 20) -> None:
    """Let every task that can run without outside help run (a few loop iterations)."""
    for _ in range(rounds):
        await asyncio.sleep(0)
