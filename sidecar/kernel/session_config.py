"""A session's configuration: its mode, its model and the agent's other config options."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from sidecar.kernel import errors
from sidecar.kernel.errors import SidecarError
from sidecar.kernel.ports import AgentConnection
from sidecar.kernel.session import Session, choice_values

JsonObj = dict[str, Any]
T = TypeVar("T")


class SessionConfig:
    """Checks each change against what the agent offers before it asks the agent."""

    def __init__(
        self,
        attach: Callable[[Session], Awaitable[AgentConnection]],
        call: Callable[[Session, Awaitable[Any]], Awaitable[Any]],
        emit_status: Callable[[], None],
    ) -> None:
        self._attach = attach  # the agent, with this session attached
        self._call = call  # a call to the session's agent, its errors made user-facing
        self._emit_status = emit_status

    async def set_mode(self, session: Session, mode_id: object) -> JsonObj:
        if not isinstance(mode_id, str) or not mode_id:
            raise errors.invalid("modeId must be a non-empty string")
        available = (session.modes or {}).get("availableModes")
        if not isinstance(available, list):
            raise SidecarError(errors.CAPABILITY, "the agent offers no session modes")
        ids = [m.get("id") for m in available if isinstance(m, dict)]
        if mode_id not in ids:
            raise errors.invalid(f"unknown mode {mode_id!r}; available: {', '.join(map(str, ids))}")
        client = await self._attach(session)
        await self._call(session, client.set_mode(session.session_id, mode_id))
        session.reported_mode_id = mode_id
        self._emit_status()
        return {}

    async def set_config_option(self, session: Session, config_id: object, value: object) -> JsonObj:
        if not isinstance(config_id, str) or not config_id:
            raise errors.invalid("configId must be a non-empty string")
        if not isinstance(value, str | bool):
            raise errors.invalid("value must be a string or a boolean")
        option = next((o for o in session.config_options if o.get("id") == config_id), None)
        if option is None:
            known = ", ".join(str(o.get("id")) for o in session.config_options) or "none"
            raise errors.invalid(f"unknown config option {config_id!r}; the agent offers: {known}")
        if option.get("type") == "select" and value not in choice_values(option):
            raise errors.invalid(
                f"{value!r} is not a value of {config_id}; choose one of: {', '.join(choice_values(option))}"
            )
        if option.get("type") == "boolean" and not isinstance(value, bool):
            raise errors.invalid(f"{config_id} takes true or false")
        client = await self._attach(session)
        result = await self._call(session, client.set_config_option(session.session_id, config_id, value))
        options = result.get("configOptions")
        if isinstance(options, list):
            session.config_options = [o for o in options if isinstance(o, dict)]
        self._emit_status()
        return {"configOptions": session.config_options}

    async def set_model(self, session: Session, model_id: object) -> JsonObj:
        """The config option of category `model` when offered, else legacy `session/set_model`."""
        if not isinstance(model_id, str) or not model_id:
            raise errors.invalid("modelId must be a non-empty string")
        option = session.model_option()
        if option is not None:
            await self.set_config_option(session, option.get("id"), model_id)
            return {}
        if session.legacy_models is None:
            raise SidecarError(errors.CAPABILITY, "the agent offers no model selection")
        available = [
            m.get("modelId")
            for m in session.legacy_models.get("availableModels") or []
            if isinstance(m, dict)
        ]
        if model_id not in available:
            raise errors.invalid(f"unknown model {model_id!r}; available: {', '.join(map(str, available))}")
        client = await self._attach(session)
        await self._call(session, client.set_model_legacy(session.session_id, model_id))
        session.legacy_models = dict(session.legacy_models, currentModelId=model_id)
        self._emit_status()
        return {}

    @staticmethod
    def absorb(session: Session, result: JsonObj) -> None:
        """Take the modes, config options and models an attach answer (new/load/resume) carries."""
        modes = result.get("modes")
        if isinstance(modes, dict):
            session.modes = modes
            session.reported_mode_id = None
        options = result.get("configOptions")
        if isinstance(options, list):
            session.config_options = [o for o in options if isinstance(o, dict)]
        models = result.get("models")
        if isinstance(models, dict):
            session.legacy_models = models
