"""The `workspace/executeCommand` commands (docs/protocol.md), applied in the order the editor sent them.

pygls runs each async command as its own task, so a command could overtake
one sent before it (a rename overtaking the prompt that creates its session).
Commands are admitted one at a time, in arrival order; `acp.status` and
`acp.permission.respond` are answered at once (they change no session, and an
answer to a permission must not wait behind the command that caused it).
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import os
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, NamedTuple

from lsprotocol import types
from pygls.exceptions import JsonRpcException

from sidecar.lsp.server import AcpLanguageServer, NotInitialized

if TYPE_CHECKING:
    from sidecar.kernel.prompts import PromptContext
    from sidecar.lsp import arguments as a

log = logging.getLogger(__name__)

JsonObj = dict[str, Any]
INVALID_PARAMS = -32602
NOT_INITIALIZED = -32002


class Command(NamedTuple):
    run: Callable[[AcpLanguageServer, Any], Awaitable[Any]]
    arguments: str  # the class in `arguments` (loaded at the first command, not at start-up)
    shortcut: str | None = None  # the key a single plain-string argument fills
    in_order: bool = True  # False: answered at once, never waits behind other commands
    # True: the command reads the editor's buffer of its `uri` as it was when the command arrived
    # (`buffer_at_arrival`), not as it is once the commands before it are done.
    reads_buffer: bool = False


COMMANDS: dict[str, Command] = {}

# The text of the open document a `reads_buffer` command names, taken in the command's first step
# (before any await: every didOpen and didChange the editor sent before the command is in it).
buffer_at_arrival: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "buffer_at_arrival", default=None
)


def command(
    name: str, arguments: str, shortcut: str | None = None, in_order: bool = True, reads_buffer: bool = False
) -> Callable[[Callable[[AcpLanguageServer, Any], Awaitable[Any]]], Any]:
    def register(fn: Callable[[AcpLanguageServer, Any], Awaitable[Any]]) -> Any:
        COMMANDS[name] = Command(fn, arguments, shortcut, in_order, reads_buffer)
        return fn

    return register


def invalid(message: str) -> JsonRpcException:
    return JsonRpcException(message=message, code=INVALID_PARAMS)


def _cwd(ls: AcpLanguageServer, cwd: str | None, uri: str | None) -> str | None:
    return cwd if cwd is not None else ls.default_cwd(uri)


# ====================================================================== commands
@command("acp.session.new", "SessionNew")
async def session_new(ls: AcpLanguageServer, args: a.SessionNew) -> Any:
    kernel = await ls.ready_kernel()
    cwd = _cwd(ls, args.cwd, args.uri)
    if cwd is None:
        raise invalid("no cwd given and no workspace folder to default to")
    return {"sessionId": await kernel.registry.new(cwd, args.agent)}


@command("acp.session.list", "SessionList")
async def session_list(ls: AcpLanguageServer, args: a.SessionList) -> Any:
    kernel = await ls.ready_kernel()
    sessions, more = await kernel.registry.list(args.cwd, args.refresh, ls.folder_paths(), args.limit)
    return {"sessions": sessions, "more": more}


@command("acp.session.load", "SessionLoad", "sessionId")
async def session_load(ls: AcpLanguageServer, args: a.SessionLoad) -> Any:
    kernel = await ls.ready_kernel()
    if args.session_id is None:
        raise invalid("sessionId is required")
    session_id = await kernel.registry.load(args.session_id, args.cwd, ls.default_cwd(args.uri), args.agent)
    if args.show:
        ls.features.show(session_id)
    return {"sessionId": session_id}


@command("acp.prompt", "Prompt", "text", reads_buffer=True)
async def prompt(ls: AcpLanguageServer, args: a.Prompt) -> Any:
    buffer = buffer_at_arrival.get()
    kernel = await ls.ready_kernel()
    documents = ls.features.documents
    identity = await documents.identify(args.uri) if args.uri and documents is not None else None
    if documents is not None and identity is not None:
        # The prompt area of a conversation document, or text for its session: nothing attached.
        result = await documents.prompt(identity, args.text, ls.default_cwd(None), buffer)
    else:
        context = await _context(ls, args.uri, args.range) if args.uri else None
        result = await kernel.actions.prompt(
            args.text, args.session_id, _cwd(ls, args.cwd, args.uri), context
        )
    if ls.options.transcript.show_on_prompt:
        ls.features.show(result["sessionId"], unless_open=True)
    return result


async def _context(ls: AcpLanguageServer, uri: str, raw_range: Any) -> PromptContext:
    from sidecar.kernel.prompts import PromptContext

    rng = None
    if raw_range is not None:
        try:
            rng = ls.protocol.converter.structure(raw_range, types.Range)
        except Exception:
            raise invalid("range must be an LSP Range {start: {line, character}, end: {...}}") from None
    try:
        text, label = await ls.files.selection(uri, rng)
    except ValueError as exc:
        raise invalid(str(exc)) from None
    return PromptContext(uri=uri, text=text, label=label)


@command("acp.cancel", "SessionTarget")
async def cancel(ls: AcpLanguageServer, args: a.SessionTarget) -> Any:
    kernel = await ls.ready_kernel()
    return {"cancelled": await kernel.actions.cancel(args.session_id)}


@command("acp.session.setMode", "SetMode", "modeId")
async def set_mode(ls: AcpLanguageServer, args: a.SetMode) -> Any:
    kernel = await ls.ready_kernel()
    return await kernel.actions.set_mode(args.mode_id, args.session_id)


@command("acp.session.setModel", "SetModel", "modelId")
async def set_model(ls: AcpLanguageServer, args: a.SetModel) -> Any:
    kernel = await ls.ready_kernel()
    return await kernel.actions.set_model(args.model_id, args.session_id)


@command("acp.session.setConfigOption", "SetConfigOption")
async def set_config_option(ls: AcpLanguageServer, args: a.SetConfigOption) -> Any:
    kernel = await ls.ready_kernel()
    from sidecar.lsp.arguments import MISSING

    if args.value is MISSING:
        raise invalid("value is required")
    return await kernel.actions.set_config_option(args.config_id, args.value, args.session_id)


@command("acp.authenticate", "Authenticate", "methodId")
async def authenticate(ls: AcpLanguageServer, args: a.Authenticate) -> Any:
    kernel = await ls.ready_kernel()
    return await kernel.actions.authenticate(args.method_id, args.agent)


@command("acp.session.delete", "SessionDelete", "sessionId")
async def session_delete(ls: AcpLanguageServer, args: a.SessionDelete) -> Any:
    kernel = await ls.ready_kernel()
    return await kernel.actions.delete(args.session_id)


@command("acp.session.fork", "SessionFork", "sessionId")
async def session_fork(ls: AcpLanguageServer, args: a.SessionFork) -> Any:
    kernel = await ls.ready_kernel()
    result = await kernel.actions.fork(args.session_id)
    if args.show:
        ls.features.show(result["sessionId"])
    return result


@command("acp.logout", "Logout", "agent")
async def logout(ls: AcpLanguageServer, args: a.Logout) -> Any:
    kernel = await ls.ready_kernel()
    return await kernel.actions.logout(args.agent)


@command("acp.agents", "NoArguments", in_order=False)
async def agents(ls: AcpLanguageServer, args: a.NoArguments) -> Any:
    kernel = ls.kernel_or_raise()
    return {
        "agents": kernel.agents.describe(kernel.registry.busy),
        "default": kernel.agents.directory.default,
    }


@command("acp.status", "NoArguments", in_order=False)
async def status(ls: AcpLanguageServer, args: a.NoArguments) -> Any:
    return ls.kernel_or_raise().status()


# ====================================================================== running them
class CommandRunner:
    """Runs commands for pygls: parses arguments, keeps the editor's order, maps errors."""

    def __init__(self, server: AcpLanguageServer) -> None:
        self.server = server
        self._order = asyncio.Lock()  # FIFO: waiters are woken in arrival order

    def register(self) -> None:
        for name, spec in COMMANDS.items():
            self.server.command(name)(self._handler(name, spec))

    def _handler(self, name: str, spec: Command) -> Callable[..., Awaitable[Any]]:
        async def run(ls: AcpLanguageServer, *raw: Any) -> Any:
            # The lock is taken in the handler's first step, before any await:
            # pygls starts the tasks in the order the messages arrived.
            if spec.reads_buffer:
                buffer_at_arrival.set(_buffer_named(ls, raw))
            if not spec.in_order:
                return await self._run(name, spec, raw)
            async with self._order:
                return await self._run(name, spec, raw)

        run.__name__ = name.replace(".", "_")
        return run

    async def _run(self, name: str, spec: Command, raw: tuple[Any, ...]) -> Any:
        from sidecar.acp.errors import AcpError  # loaded with the engine; not at start-up
        from sidecar.lsp import arguments

        ls = self.server
        try:
            args = arguments.parse(name, getattr(arguments, spec.arguments), spec.shortcut, raw)
            result = await spec.run(ls, args)
        except arguments.BadArguments as exc:
            self._echo_error(name, str(exc))
            raise invalid(str(exc)) from None
        except NotInitialized as exc:
            raise JsonRpcException(message=str(exc), code=NOT_INITIALIZED) from None
        except AcpError as exc:
            self._echo_error(name, exc.message)
            raise JsonRpcException(message=exc.message, code=exc.code, data=exc.data) from None
        except JsonRpcException as exc:
            self._echo_error(name, exc.message or "")
            raise
        except Exception as exc:
            log.exception("command %s failed", name)
            raise JsonRpcException(message=f"{name} failed: {exc!r}", code=-32603) from None
        if ls.echo_results:
            echo_result(ls, name, result)
        return result

    def _echo_error(self, name: str, message: str) -> None:
        if self.server.echo_results:
            self.server.show_message(types.MessageType.Error, f"{name}: {message}")


def _buffer_named(ls: AcpLanguageServer, raw: tuple[Any, ...]) -> str | None:
    """The editor's text of the document a command's `uri` argument names, when it is open."""
    uri = raw[0].get("uri") if len(raw) == 1 and isinstance(raw[0], dict) else None
    return ls.buffer(uri) if isinstance(uri, str) and uri else None


def _agent_tag(ls: AcpLanguageServer, agent: object) -> str:
    """` [NAME]` for a session of an agent other than the default one; nothing for the default's."""
    if ls.kernel is None or not isinstance(agent, str) or agent == ls.kernel.agents.directory.default:
        return ""
    return f" [{ls.clean(agent, 60)}]"


def echo_result(ls: AcpLanguageServer, name: str, result: Any) -> None:
    """For editors that drop command results (Helix): say the useful ones in the message line."""
    if name == "acp.session.list":
        sessions = result.get("sessions") or []
        lines = []
        for entry in sessions[:20]:
            mark = "* " if entry.get("active") else ""
            entry_title = ls.clean(entry.get("title") or "untitled", 60)
            lines.append(
                f"{mark}{entry_title}{_agent_tag(ls, entry.get('agent'))} — {entry.get('sessionId')}"
            )
        hidden = max(len(sessions) - 20, 0)
        if result.get("more"):  # the answer held the newest only
            more = f" (and over {hidden} more)" if hidden else " (and older ones)"
        else:
            more = f" (and {hidden} more)" if hidden else ""
        text = "; ".join(lines) if lines else "no sessions"
        ls.show_message(types.MessageType.Info, f"ACP sessions{more}: {text}")
    elif name in ("acp.session.new", "acp.session.load"):
        # By its title, as the title messages say it; a session without one (a new one) by its id.
        session_id = str(result.get("sessionId"))
        title = ls.kernel.catalog.title_of(session_id) if ls.kernel is not None else None
        tag = _agent_tag(ls, ls.kernel.agents.directory.owner_of(session_id) if ls.kernel else None)
        if title:
            ls.show_message(types.MessageType.Info, f"ACP session: {ls.clean(title, 200)}{tag}")
        else:
            ls.show_message(types.MessageType.Info, f"ACP session {session_id}{tag} is active (untitled)")
    elif name == "acp.session.fork":
        title, tag = ls.clean(result.get("title") or "", 200), _agent_tag(ls, result.get("agent"))
        ls.show_message(types.MessageType.Info, f"ACP session: {title}{tag}")
    elif name == "acp.session.transcript":
        ls.show_message(types.MessageType.Info, f"ACP conversation document: {result.get('uri')}")
    elif name == "acp.agents":
        listed = [
            f"{'* ' if agent['default'] else ''}{agent['name']} ({agent['state']})"
            for agent in result["agents"]
        ]
        ls.show_message(types.MessageType.Info, f"ACP agents: {', '.join(listed)}")
    elif name == "acp.status":
        ls.show_message(types.MessageType.Info, str(result.get("text")))
    elif name == "acp.changes.list":
        files = result["files"]
        hunks = sum(len(f["hunks"]) for f in files)
        where = ", ".join(ls.clean(os.path.basename(f["path"]), 60) for f in files[:10])
        text = f"{hunks} in {len(files)} file{'s' if len(files) != 1 else ''}: {where}" if hunks else "none"
        ls.show_message(types.MessageType.Info, f"ACP agent changes: {text}")
