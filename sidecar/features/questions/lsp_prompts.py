"""The agent's questions (elicitation) in the editor: `acp/elicitation` notifications, and asking
through plain LSP where no plugin does (`notify.elicitationDialog`).

A plugin (Neovim, VS Code) asks each field itself from the fields the sidecar sends and answers
with `acp.elicitation.respond`; the sidecar checks and converts the answers (core). Without a
plugin: a form whose fields are all choices or yes/no is asked one `window/showMessageRequest`
per field (a dismissed dialog declines: the agent is never left waiting); any other form, and
every question in an editor without `showMessageRequest` (Helix 25.07), is named in the message
line with where to answer it (its block in the conversation document, written by core, or the
command), and code actions decline it. A URL is opened
(`window/showDocument` with `external: true`) only after the user chose "Open".
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from sidecar.tasks import OwnedTasks

if TYPE_CHECKING:
    from sidecar.features.questions.forms import Field
    from sidecar.features.questions.question import Elicitation
    from sidecar.lsp.ports import ElicitationPort

log = logging.getLogger(__name__)

JsonObj = dict[str, Any]
OPEN = "Open"
DECLINE = "Decline"
YES, NO = "Yes", "No"


class ElicitationPrompts:
    def __init__(
        self, port: ElicitationPort, tasks: OwnedTasks, answer: Callable[[str, str, object], Awaitable[None]]
    ) -> None:
        self.port = port
        self._respond = answer  # a pending question answered (the engine checks it against its form)
        self._tasks = tasks

    def on_elicitation(self, elicitation: Elicitation, state: str, answer: JsonObj | None) -> None:
        self.port.notify(
            "acp/elicitation",
            {
                **elicitation.to_json(),
                "state": state,
                "action": answer.get("action") if answer is not None else None,
            },
        )
        if state != "pending" or not self.port.options.notify.elicitation_dialog:
            return
        if self.port.caps.message_request and (elicitation.url is not None or _choices_only(elicitation)):
            self._tasks.spawn(self._ask(elicitation), f"elicitation-{elicitation.elicitation_id}")
        else:
            self.port.show_message(types.MessageType.Warning, self._how_to_answer(elicitation))

    def _how_to_answer(self, elicitation: Elicitation) -> str:
        what = self.port.clean(elicitation.message, 300)
        ident = elicitation.elicitation_id
        if elicitation.url is not None:
            url = self.port.clean(elicitation.url, 500)
            return (
                f"The agent asks you to open {url} ({what}). When done: acp.elicitation.respond "
                f'{{"elicitationId": "{ident}", "action": "accept"}}; or "action": "decline".'
            )
        example = {f.name: _example(f) for f in elicitation.form.fields} if elicitation.form else {}
        fields = "; ".join(_describe(f) for f in elicitation.form.fields) if elicitation.form else ""
        where = (
            'Answer in its form in the conversation document (code action "Answer the agent" there), or '
            if elicitation.session_id is not None
            else "Answer "
        )
        return (
            f"The agent asks: {what} ({self.port.clean(fields, 600)}). {where}with acp.elicitation.respond "
            f'{{"elicitationId": "{ident}", "content": {self.port.clean(json.dumps(example), 400)}}}, '
            'or "action": "decline" (also a code action).'
        )

    async def _ask(self, elicitation: Elicitation) -> None:
        ident = elicitation.elicitation_id
        if elicitation.url is not None:
            chosen = await self._question(
                elicitation,
                f"The agent asks you to open {self.port.clean(elicitation.url, 500)}: "
                f"{self.port.clean(elicitation.message, 300)}",
                [OPEN, DECLINE],
            )
            if chosen is None:
                return  # answered elsewhere meanwhile
            if chosen != OPEN:
                await self._answer(ident, "decline")
                return
            if self.port.caps.show_document:
                try:
                    await asyncio.wait_for(self.port.open_external(elicitation.url), 30)
                except Exception as exc:  # the answer stands: the user agreed and has the URL
                    log.warning("showDocument (external) failed: %r", exc)
            await self._answer(ident, "accept")
            return
        assert elicitation.form is not None
        content: JsonObj = {}
        for f in elicitation.form.fields:
            labels = [o.title for o in f.options] if f.kind == "enum" else [YES, NO]
            about = f": {self.port.clean(f.description, 200)}" if f.description else ""
            asked = f"{self.port.clean(elicitation.message, 300)} — {self.port.clean(f.title, 120)}{about}"
            chosen = await self._question(
                elicitation,
                f"The agent asks: {asked}",
                [*labels, DECLINE],
            )
            if chosen is None:
                return
            if chosen == DECLINE:
                await self._answer(ident, "decline")
                return
            content[f.name] = (chosen == YES) if f.kind == "boolean" else chosen
        await self._answer(ident, "accept", content)

    async def _question(self, elicitation: Elicitation, message: str, actions: list[str]) -> str | None:
        """The title the user chose; DECLINE when dismissed; None when the question was answered
        another way (cancel, code action, command) while the dialog was up."""
        ask = asyncio.ensure_future(
            self.port.show_message_request(
                types.ShowMessageRequestParams(
                    type=types.MessageType.Info,
                    message=message,
                    actions=[types.MessageActionItem(title=a) for a in actions],
                )
            )
        )
        try:
            waiters: set[asyncio.Future[Any]] = {ask, elicitation.future}
            await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
        finally:
            if not ask.done():
                ask.cancel()
        if elicitation.future.done():
            return None
        try:
            chosen = ask.result()
        except Exception as exc:
            log.warning("showMessageRequest failed: %r; the question is declined", exc)
            return DECLINE
        title = getattr(chosen, "title", None)
        return title if title in actions else DECLINE

    async def _answer(self, elicitation_id: str, action: str, content: object = None) -> None:
        try:
            await self._respond(elicitation_id, action, content)
        except Exception as exc:  # answered meanwhile, or the answer did not fit: say so
            self.port.show_message(types.MessageType.Warning, f"The agent's question: {exc}")


def _choices_only(elicitation: Elicitation) -> bool:
    form = elicitation.form
    return form is not None and all(f.kind in ("enum", "boolean") for f in form.fields)


def _describe(f: Field) -> str:
    need = "required" if f.required else "optional"
    if f.options:
        return f"{f.name}: one of {', '.join(o.value for o in f.options[:10])} ({need})"
    return f"{f.name}: {f.kind}{' ' + f.format if f.format else ''} ({need})"


def _example(f: Field) -> Any:
    if f.default is not None:
        return f.default
    if f.kind == "boolean":
        return True
    if f.kind in ("number", "integer"):
        return 0
    if f.kind == "enum":
        return f.options[0].value
    if f.kind == "multiselect":
        return [f.options[0].value]
    return "..."
