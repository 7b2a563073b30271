"""The user's actions on sessions, as the editor's commands ask for them: a prompt (with the files
it mentions), a cancel, a session's mode, model and config options, signing in and out.

Each is the kernel's own logic over its parts; what the features do about it, they do on the bus
(`PromptAdmitted`, `CancelRequested`, `ModeSet`, `ModelSet`, `OptionsSet`).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sidecar.acp.errors import RESOURCE_NOT_FOUND
from sidecar.kernel import errors
from sidecar.kernel.bus import (
    CancelRequested,
    ModelSet,
    ModeSet,
    OptionsSet,
    PromptAdmitted,
    SessionDeleted,
    SessionDeleting,
    SessionForking,
)
from sidecar.kernel.errors import SidecarError
from sidecar.kernel.files import read_text, resolve_inside
from sidecar.kernel.mentions import MAX_MENTIONS, find_mentions
from sidecar.kernel.prompts import PromptContext, prompt_blocks
from sidecar.kernel.session import Session
from sidecar.kernel.turns import TurnKind

if TYPE_CHECKING:
    from sidecar.kernel.agent_supervisor import AgentSupervisor
    from sidecar.kernel.agents import Agents
    from sidecar.kernel.bus import EventBus
    from sidecar.kernel.file_ops import FileOps
    from sidecar.kernel.ports import EditorFiles
    from sidecar.kernel.session_config import SessionConfig
    from sidecar.kernel.sessions import Sessions
    from sidecar.kernel.turn_queue import TurnQueue

log = logging.getLogger(__name__)

JsonObj = dict[str, Any]


class Actions:
    def __init__(
        self,
        registry: Sessions,
        turns: TurnQueue,
        agents: Agents,
        config: SessionConfig,
        bus: EventBus,
        files: EditorFiles,
        file_ops: FileOps,
    ) -> None:
        self.registry, self.turns, self.agents, self.config = registry, turns, agents, config
        self.bus, self.files, self.file_ops = bus, files, file_ops

    # ------------------------------------------------------------------ turns
    async def prompt(
        self,
        text: object,
        session_id: str | None = None,
        cwd: str | None = None,
        context: PromptContext | None = None,
    ) -> JsonObj:
        """`acp.prompt`: the turn admitted (a session created when none is active)."""
        if not isinstance(text, str) or not text.strip():
            raise errors.invalid("text must be a non-empty string")
        session = await self.registry.for_prompt(session_id, cwd)
        contexts = [context] if context is not None else []
        contexts += await self.mention_contexts(session, text)  # refuses before anything is sent
        described = self.agents.by_name[session.agent].agent
        embed = described is not None and described.can_embed_context
        turns = self.turns
        turn = turns.admit(session, prompt_blocks(text, contexts, embed), TurnKind.PROMPT, echo=text)
        self.bus.publish(PromptAdmitted(session, turn, text))
        return {
            "sessionId": session.session_id,
            "turnId": turn.turn_id,
            "position": turns.position(session, turn),
        }

    async def mention_contexts(self, session: Session, text: str) -> list[PromptContext]:
        """The files a prompt mentions (`@path`), as context: each inside the session's folders,
        its open buffer first (unsaved text included), UTF-8 text only. The first one that cannot
        go along is refused by name, so nothing is sent."""
        mentions = find_mentions(text)
        if len(mentions) > MAX_MENTIONS:
            raise errors.invalid(
                f"the prompt mentions {len(mentions)} files; at most {MAX_MENTIONS} go along with one "
                "prompt; nothing was sent"
            )
        contexts: list[PromptContext] = []
        for mention in mentions:
            try:
                path = resolve_inside(str(Path(session.cwd, mention.path)), session.roots)
                content = self.files.open_document_text(path)
                if content is None:
                    content = await self.file_ops.run(session.session_id, read_text, path, session.roots)
                if "\x00" in content:
                    raise errors.invalid(f"{path} is a binary file")
            except SidecarError as exc:
                why = "no such file" if exc.code == RESOURCE_NOT_FOUND else exc.message
                raise SidecarError(exc.code, f"{mention.written:.300}: {why}; nothing was sent") from None
            contexts.append(PromptContext(uri=path.as_uri(), text=content))
        return contexts

    async def cancel(self, session_id: str | None = None) -> bool:
        """`acp.cancel`: the turn at position 0, whatever its state (see `TurnQueue.cancel`)."""
        session = await self.registry.resolve(session_id)
        cancelled = await self.turns.cancel(session)
        self.bus.publish(CancelRequested(session))
        return cancelled

    # ------------------------------------------------------------------ delete, fork
    async def delete(self, session_id: object) -> JsonObj:
        """`session/delete` on the session's agent (when it offers it), then its title and its
        conversation document are removed here too. A busy session is refused (nothing is lost:
        cancel its turn first); one the agent no longer knows is removed here all the same."""
        if not isinstance(session_id, str) or not session_id:
            raise errors.invalid("sessionId must be a non-empty string")
        session = self.registry.by_id.get(session_id)
        if session is None and await self.registry.catalog.find(session_id) is None:
            raise errors.unknown_session(session_id)
        if session is not None and (session.queue or session.permissions or session.state() != "idle"):
            raise errors.invalid(
                f"session {session_id} is busy: cancel its turn (acp.cancel) before deleting it"
            )
        supervisor = self.agents.of(session_id)
        client = await supervisor.ensure()
        try:
            await supervisor.call(client.delete_session(session_id))
        except errors.SidecarError as exc:
            if exc.code != RESOURCE_NOT_FOUND:
                raise
            log.info("session/delete: the agent no longer knows %s; removed here", session_id)
        await self.bus.settle(SessionDeleting(session_id))
        self.registry.forget(session_id)
        await self.registry.catalog.forget(session_id)
        await self.bus.settle(SessionDeleted(session_id))
        return {"sessionId": session_id}

    def can_fork(self, session_id: str) -> bool:
        """The session's agent offers `session/fork` (known once it has started)."""
        agent = self.agents.of(session_id).agent
        return agent is not None and agent.can_fork

    async def fork(self, session_id: object | None) -> JsonObj:
        """`session/fork` of a session (the active one by default) on its agent, when it offers it:
        the new session becomes the active one; its document starts with the parent's. A parent
        with a turn running may be forked: its agent decides what of that turn the fork holds."""
        registry = self.registry
        if session_id is not None and (not isinstance(session_id, str) or not session_id):
            raise errors.invalid("sessionId must be a non-empty string")
        if session_id is None or session_id in registry.by_id:
            parent = await registry.resolve(session_id)
        elif await registry.catalog.find(session_id) is None:
            raise errors.unknown_session(session_id)
        else:  # a session of the title cache: attached first (its cwd and agent are known then)
            parent = registry.get(await registry.load(session_id))
        supervisor = self.agents.by_name[parent.agent]
        await supervisor.ensure()
        if not self.can_fork(parent.session_id):
            raise SidecarError(errors.CAPABILITY, "the agent does not offer session/fork")
        await self.bus.settle(SessionForking(parent))
        session = await registry.fork(parent)
        return {
            "sessionId": session.session_id,
            "title": registry.catalog.current_title(session.session_id),
            "agent": session.agent,
        }

    # ------------------------------------------------------------------ configuration
    async def set_mode(self, mode_id: object, session_id: str | None = None) -> JsonObj:
        session = await self.registry.resolve(session_id)
        result = await self.config.set_mode(session, mode_id)
        if isinstance(mode_id, str):
            self.bus.publish(ModeSet(session, mode_id))
        return result

    async def set_config_option(
        self, config_id: object, value: object, session_id: str | None = None
    ) -> JsonObj:
        session = await self.registry.resolve(session_id)
        result = await self.config.set_config_option(session, config_id, value)
        self.bus.publish(OptionsSet(session))
        return result

    async def set_model(self, model_id: object, session_id: str | None = None) -> JsonObj:
        session = await self.registry.resolve(session_id)
        legacy = session.model_option() is None
        result = await self.config.set_model(session, model_id)
        if legacy and isinstance(model_id, str):
            self.bus.publish(ModelSet(session, model_id, session.model_name))
        else:
            self.bus.publish(OptionsSet(session))
        return result

    # ------------------------------------------------------------------ signing in and out
    def _agent_for(self, agent: object | None) -> AgentSupervisor:
        """The named agent, else the active session's, else the default."""
        registry, agents = self.registry, self.agents
        if agent is None and registry.active is not None:
            return agents.by_name[registry.active.agent]
        return agents.get(agent)

    async def authenticate(self, method_id: object, agent: object | None = None) -> JsonObj:
        return await self._agent_for(agent).authenticate(method_id)

    async def logout(self, agent: object | None = None) -> JsonObj:
        """Log out of an agent that offers it."""
        return await self._agent_for(agent).logout()
