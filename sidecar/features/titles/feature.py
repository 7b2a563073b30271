"""The titles feature's engine side: titling on the kernel, and the rename command's logic.

It keeps the sessions' catalogue (the kernel's `SessionCatalog` port) and reacts to what the
kernel publishes: a `session_info_update` (the agent's title), a prompt admitted (the fallback
title from the first one), a rename turn's end, an agent ready (reconcile with its session/list).
The composition subscribes those handlers in its one table (`sidecar/composition.py`).
"""

from __future__ import annotations

from typing import Any

from sidecar.acp.errors import METHOD_NOT_FOUND
from sidecar.features.titles.titling import Titling
from sidecar.kernel import errors
from sidecar.kernel.bus import AgentReady, PromptAdmitted, TurnEnded, UpdateRouted
from sidecar.kernel.kernel import SAVE_BEFORE_STOP_WAIT, Kernel
from sidecar.kernel.prompts import rename_prompt
from sidecar.kernel.session import Session
from sidecar.kernel.turns import TurnKind

JsonObj = dict[str, Any]


class Titles:
    def __init__(self, kernel: Kernel) -> None:
        self._kernel = kernel
        self.titling = Titling(kernel.ctx)
        kernel.provide_catalog(self.titling)
        kernel.on_start(self.titling.open)
        # Titles known now reach the disk before the agents are asked to stop: a title the user
        # saw must survive a stop that uses up the editor's time.
        kernel.before_agents_stop("saving titles", lambda: self.titling.save_pending(SAVE_BEFORE_STOP_WAIT))
        # Its last title changes go to the documents too: closed before the conversation's.
        kernel.after_agents_stop("closing the title cache", self.titling.aclose)

    # ------------------------------------------------------------------ what it reacts to
    def info_update(self, event: UpdateRouted) -> None:
        """The agent's `session_info_update`: its title and metadata."""
        if event.routed.update.kind == "session_info_update":
            self.titling.on_info_update(event.session, event.routed.update.raw)

    def prompt_admitted(self, event: PromptAdmitted) -> None:
        """The session's first prompt gives it a fallback title until a better one comes."""
        session = event.session
        if not session.first_prompt_seen:
            session.first_prompt_seen = True
            self.titling.first_prompt(session, event.text)

    def turn_ended(self, event: TurnEnded) -> None:
        """A rename turn's outcome."""
        if event.turn.kind is TurnKind.RENAME:
            self.titling.rename_turn_ended(event.session, event.turn)

    def agent_ready(self, event: AgentReady) -> None:
        """An agent that lists its sessions: the catalogue is reconciled with its list."""
        if event.agent.can_list:
            self._kernel.spawn(
                self.titling.reconcile_all(event.client, event.name), f"startup-reconcile-{event.name}"
            )

    # ------------------------------------------------------------------ the rename command
    async def rename(self, title: object, session_id: str | None = None) -> JsonObj:
        """`session/set_title` when the agent offers it, or its own rename method (any session the
        title cache knows), else a rename prompt queued in the session."""
        registry, titles = self._kernel.registry, self.titling
        session: Session | None = None
        if isinstance(session_id, str) and session_id not in registry.by_id:
            target = session_id  # not loaded here: set_title may still rename it
        else:
            session = await registry.resolve(session_id)
            target = session.session_id
        requested = titles.validate_user_title(title)
        if session is None:
            await titles.find(target)  # its agent, from the title cache
        supervisor = self._kernel.agents.of(target)
        client = await supervisor.ensure()
        agent = supervisor.agent
        if agent is not None and agent.can_rename:

            async def set_title(sid: str, wanted: str) -> str:
                return await supervisor.call(client.set_title(sid, wanted))

            try:
                await titles.rename_by_agent(target, requested, set_title)
                return {"sessionId": target, "requestedTitle": requested}
            except errors.SidecarError as exc:
                if agent.can_set_title or exc.code != METHOD_NOT_FOUND:
                    raise
                # Its own method is missing too (an older version): a rename prompt, as for any agent.
        if session is None:
            raise errors.unknown_session(target)
        blocks, meta = rename_prompt(requested)
        turn = self._kernel.turns.admit(session, blocks, TurnKind.RENAME, meta=meta)
        titles.rename_requested(session, requested, turn)
        return {"sessionId": session.session_id, "requestedTitle": requested}
