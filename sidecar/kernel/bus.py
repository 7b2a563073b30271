"""The engine's events, and the one small bus its side paths subscribe to.

The parts that decide (the session registry, the turn queue, titling, the agent supervisor)
publish what happened; the side paths (the conversation documents, titles, reviewed edits, the
status, the editor) subscribe to it in `subscribe` (`sidecar/composition.py`), the one place
that says who reacts to what. Delivery is synchronous, in publication order, and to each
subscriber in the order it subscribed: an event is handled completely before the publisher goes
on. A subscriber that raises is reported and the others still get the event.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

import msgspec

if TYPE_CHECKING:
    from sidecar.acp import AgentDescription
    from sidecar.kernel.ports import AgentConnection
    from sidecar.kernel.session import Session
    from sidecar.kernel.turns import Turn
    from sidecar.kernel.updates import Routed, Update

JsonObj = dict[str, Any]
E = TypeVar("E")


class UpdateRouted(msgspec.Struct, frozen=True):
    """A session/update the registry routed (after the session's own state took it in);
    `state_changed`: the session's mode, config options or usage changed with it. (A struct: one
    is built per update, a frozen dataclass takes seven times as long.)"""

    session: Session
    routed: Routed
    state_changed: bool = False

    # Read like the `Routed` it carries, so a reaction that only sends it on (the editor's
    # coalescer) takes the event itself: one hop less for every chunk.
    @property
    def update(self) -> Update:
        return self.routed.update

    @property
    def session_id(self) -> str:
        return self.routed.update.session_id

    @property
    def turn_id(self) -> str | None:
        return self.routed.turn_id

    @property
    def replay(self) -> bool:
        return self.routed.replay


@dataclass(frozen=True)
class SessionOpened:
    """The agent holds the session (new, resumed or loaded)."""

    session: Session


@dataclass(frozen=True)
class ReplayBoundary:
    """A `session/load` begins (`starting`) or ends replaying the session's history."""

    session: Session
    starting: bool


@dataclass(frozen=True)
class PromptSent:
    session: Session
    turn: Turn


@dataclass(frozen=True)
class TurnEnded:
    """A turn ended (once, however it ended)."""

    session: Session
    turn: Turn


@dataclass(frozen=True)
class RequestsWithdrawn:
    """The session's turn is being cancelled, or is gone: the agent's requests that wait for the
    user (permissions, questions) are answered cancelled now."""

    session: Session


@dataclass(frozen=True)
class TurnSettling:
    """The agent answered a turn's prompt; awaited (`EventBus.settle`) before the turn's end is
    told, for what the answer leaves to finish (the editor looks at the disk then)."""

    session: Session


@dataclass(frozen=True)
class PromptAdmitted:
    """A user's prompt was admitted as a turn of the session (`text` as the user wrote it)."""

    session: Session
    turn: Turn
    text: str


@dataclass(frozen=True)
class ConversationPiece:
    """A feature's Markdown piece for the session's conversation document, its untrusted parts
    escaped by the feature (`kernel/pieces.py`): a terminal's output, a question's block.
    `urgent`: written out at once, not within the interval."""

    session: Session
    markdown: str
    urgent: bool = False


@dataclass(frozen=True)
class QuestionSettled:
    """The question whose block is `ident` ended: the block gives way to `markdown`, the line that
    records its outcome (added at the end where the block is gone)."""

    session: Session
    ident: str
    markdown: str


@dataclass(frozen=True)
class TitleChanged:
    """A session's title record changed (`info` is its acp/sessionInfo); `elsewhere`: another
    sidecar on the state directory saved it (and retitled the documents it writes)."""

    info: JsonObj
    elsewhere: bool = False


@dataclass(frozen=True)
class AgentReady:
    """An agent process initialized (`name`: the configured agent's)."""

    name: str
    client: AgentConnection
    agent: AgentDescription


@dataclass(frozen=True)
class AgentLost:
    """An agent process went away (`name`: the configured agent's); the others are untouched."""

    name: str
    reason: str


@dataclass(frozen=True)
class AgentStopped:
    """An agent was stopped after its idle time (`name`: the configured agent's); awaited."""

    name: str


@dataclass(frozen=True)
class CancelRequested:
    """The user cancelled the session's turn (`acp.cancel`), whatever the turn's state was."""

    session: Session


@dataclass(frozen=True)
class SessionDeleting:
    """The agent deleted the session (or no longer knew it); awaited before it is forgotten."""

    session_id: str


@dataclass(frozen=True)
class SessionDeleted:
    """The session was forgotten here (the registry, the catalogue); awaited."""

    session_id: str


@dataclass(frozen=True)
class SessionForking:
    """A fork of `parent` is about to be asked of its agent; awaited (the fork's document starts
    with the parent's, so that is written out first)."""

    parent: Session


@dataclass(frozen=True)
class ModeSet:
    """The user set the session's mode (the agent accepted it)."""

    session: Session
    mode_id: str


@dataclass(frozen=True)
class ModelSet:
    """The user set the session's model through the agent's legacy `session/set_model`."""

    session: Session
    model_id: str
    name: str | None


@dataclass(frozen=True)
class OptionsSet:
    """The user set one of the session's config options (the model's included)."""

    session: Session


@dataclass(frozen=True)
class StatusChanged:
    """Something acp/status shows changed."""


@dataclass
class EventBus:
    """Typed publish/subscribe (see the module doc). `on_failure(name, exc)` hears of a
    subscriber that raised."""

    on_failure: Callable[[str, BaseException], None]
    _handlers: dict[type, list[Callable[[Any], object]]] = field(default_factory=dict)
    _awaited: dict[type, list[Callable[[Any], Awaitable[None]]]] = field(default_factory=dict)
    # Who each handler is, as the table of docs/architecture.md names it.
    _who: dict[int, str] = field(default_factory=dict)

    def subscribe(self, kind: type[E], *handlers: Callable[[E], object]) -> None:
        self._handlers.setdefault(kind, []).extend(handlers)

    def subscribe_awaited(self, kind: type[E], *handlers: Callable[[E], Awaitable[None]]) -> None:
        """Handlers the publisher waits for (`settle`), one after the other."""
        self._awaited.setdefault(kind, []).extend(handlers)

    def react(self, kind: type[E], who: str, handler: Callable[[E], object]) -> None:
        """`subscribe` one handler, named as the table of docs/architecture.md names it."""
        self._who[id(handler)] = who
        self.subscribe(kind, handler)

    def react_awaited(self, kind: type[E], who: str, handler: Callable[[E], Awaitable[None]]) -> None:
        self._who[id(handler)] = who
        self.subscribe_awaited(kind, handler)

    def subscribers(self, kind: type) -> list[Callable[[Any], Any]]:
        """Who reacts to `kind`, in order (the awaited ones after the others)."""
        return [*self._handlers.get(kind, ()), *self._awaited.get(kind, ())]

    def who(self, kind: type) -> list[str]:
        """The names of who reacts to `kind`, in order (a handler without one: its qualname)."""
        return [self._who.get(id(h), getattr(h, "__qualname__", repr(h))) for h in self.subscribers(kind)]

    def kinds(self) -> list[type]:
        """Every event kind someone subscribed to."""
        return list(dict.fromkeys([*self._handlers, *self._awaited]))

    async def settle(self, event: object) -> None:
        """Publish `event` and wait for its awaited handlers, in order; one that raises is
        reported and the ones after it still run."""
        self.publish(event)
        for handler in self._awaited.get(type(event), ()):
            try:
                await handler(event)
            except Exception as exc:
                self._failed(event, handler, exc)

    def publish(self, event: object) -> None:
        for handler in self._handlers.get(type(event), ()):
            try:
                handler(event)
            except Exception as exc:
                self._failed(event, handler, exc)

    def _failed(self, event: object, handler: Callable[[Any], Any], exc: Exception) -> None:
        name = getattr(handler, "__qualname__", repr(handler))
        self.on_failure(f"{type(event).__name__} -> {name}", exc)
