"""The demo agent's tool calls: reads and edits through the client's ``fs/*`` (or the disk), and
permission requests through ``session/request_permission``."""

from __future__ import annotations

import os
import re
import urllib.parse
from dataclasses import dataclass
from typing import Any

from sidecar.acp.errors import INTERNAL_ERROR
from sidecar.demo_agent.catalog import ALLOW_OPTIONS, PERMISSION_NAMES, PERMISSION_OPTIONS
from sidecar.demo_agent.protocol import JsonObject, RpcError, log
from sidecar.demo_agent.turn import Turn, TurnCancelled, text_content

EDIT_LINE = "Edited by the acp-sidecar demo agent.\n"
# ToolCall.name: the programmatic tool name, next to the human title.
READ_TOOL = "read_file"
WRITE_TOOL = "write_file"
COMMAND_TOOL = "run_command"
_PATH_TOKEN = re.compile(r"[^\s`'\"<>()\[\]{},;]+")


@dataclass
class ReadResult:
    rel: str
    text: str | None = None
    error: str | None = None


# -- paths ---------------------------------------------------------------------


def _is_under(path: str, root: str) -> bool:
    real, real_root = os.path.realpath(path), os.path.realpath(root)
    return real == real_root or real.startswith(real_root.rstrip(os.sep) + os.sep)


def _path_from_uri(uri: Any) -> str | None:
    if not isinstance(uri, str):
        return None
    parsed = urllib.parse.urlparse(uri)
    if parsed.scheme != "file":
        return None
    return urllib.parse.unquote(parsed.path)


def resolve(turn: Turn, path: str) -> str | None:
    """An absolute path for ``path`` if it lies in the workspace."""
    full = os.path.normpath(path if os.path.isabs(path) else os.path.join(turn.cwd, path))
    roots = [turn.cwd, *turn.record.additional_directories]
    return full if any(_is_under(full, root) for root in roots) else None


def rel(turn: Turn, path: str) -> str:
    return os.path.relpath(path, turn.cwd) if _is_under(path, turn.cwd) else path


def context_blocks(turn: Turn) -> list[str]:
    """The prompt's context blocks as the answer reports them: `PATH (embedded, N lines)` for a
    `resource` with text, `PATH (linked)` for a `resource_link` (PATH relative to cwd)."""
    found = []
    for block in turn.blocks:
        if block["type"] == "resource" and isinstance(block.get("resource"), dict):
            resource = block["resource"]
            path = _path_from_uri(resource.get("uri")) or str(resource.get("uri"))
            text = resource.get("text")
            size = f"{len(text.splitlines())} lines" if isinstance(text, str) else "binary"
            found.append(f"{rel(turn, path)} (embedded, {size})")
        elif block["type"] == "resource_link":
            path = _path_from_uri(block.get("uri")) or str(block.get("uri"))
            found.append(f"{rel(turn, path)} (linked)")
    return found


def readme(turn: Turn) -> str | None:
    try:
        names = sorted(
            entry.name
            for entry in os.scandir(turn.cwd)
            if entry.name.lower().startswith("readme") and entry.is_file()
        )
    except OSError:
        return None
    return os.path.join(turn.cwd, names[0]) if names else None


def _cwd_file_names(turn: Turn) -> set[str]:
    try:
        return {entry.name for entry in os.scandir(turn.cwd) if entry.is_file()}
    except OSError:
        return set()


def read_target(turn: Turn) -> str | None:
    """The first existing workspace file the prompt names, else README*, else None.

    A word names a file when it has a ``.`` or a ``/`` (``src/main.py``), or when it is
    exactly the name of a file in cwd (``Makefile``, ``Dockerfile``, ``LICENSE``)."""
    cwd_files: set[str] | None = None
    for block in turn.blocks:
        candidates: list[str] = []
        if block["type"] == "text":
            for token in _PATH_TOKEN.findall(str(block["text"])):
                token = token.rstrip(".:!?")
                if not token or token.startswith("#"):
                    continue
                if "." in token or "/" in token:
                    candidates.append(token)
                    continue
                if cwd_files is None:
                    cwd_files = _cwd_file_names(turn)  # one directory read, not one stat per word
                if token in cwd_files:
                    candidates.append(token)
        elif block["type"] == "resource_link":
            candidates.append(_path_from_uri(block.get("uri")) or "")
        elif block["type"] == "resource":
            resource = block.get("resource")
            if isinstance(resource, dict):
                candidates.append(_path_from_uri(resource.get("uri")) or "")
        for candidate in candidates:
            if not candidate:
                continue
            full = resolve(turn, candidate)
            if full is not None and os.path.isfile(full):
                return full
    return readme(turn)


# -- file access -----------------------------------------------------------------


async def read_file(turn: Turn, path: str) -> str:
    if turn.agent.client_read:
        result = await turn.call("fs/read_text_file", {"sessionId": turn.record.session_id, "path": path})
        if not isinstance(result, dict) or not isinstance(result.get("content"), str):
            raise RpcError(INTERNAL_ERROR, "the client's read answer has no 'content'")
        return str(result["content"])
    # The client offered no fs access: read the disk ourselves.
    return _read_disk(path)


async def write_file(turn: Turn, path: str, content: str) -> None:
    if turn.agent.client_write and not turn.agent.settings.has("own-writes"):
        await turn.call(
            "fs/write_text_file",
            {"sessionId": turn.record.session_id, "path": path, "content": content},
        )
        return
    _write_disk(path, content)


def _is_file(path: str) -> bool:
    return os.path.isfile(path)


def _read_disk(path: str) -> str:
    with open(path, encoding="utf-8", errors="replace") as handle:
        return handle.read()


def _write_disk(path: str, content: str) -> None:
    tmp = f"{path}.demo-agent.tmp"
    with open(tmp, "w", encoding="utf-8") as handle:
        handle.write(content)
    os.replace(tmp, path)


# -- tool calls --------------------------------------------------------------------


async def read_step(turn: Turn, path: str) -> ReadResult:
    """A read tool call for ``path``: pending, the read, then completed (or failed)."""
    name = rel(turn, path)
    tool_id = turn.new_id("read")
    turn.update(
        {
            "sessionUpdate": "tool_call",
            "toolCallId": tool_id,
            "title": f"Read {name}",
            "name": READ_TOOL,
            "kind": "read",
            "status": "pending",
            "locations": [{"path": path}],
        }
    )
    try:
        text = await read_file(turn, path)
    except (RpcError, OSError) as exc:
        message = turn.fail_tool(tool_id, f"Could not read {name}", exc)
        return ReadResult(name, error=message)
    lines = text.splitlines()
    head = "\n".join(lines[:3])
    summary = f"{name}: {len(lines)} lines. First lines:\n{head}" if lines else f"{name} is empty."
    turn.update(
        {
            "sessionUpdate": "tool_call_update",
            "toolCallId": tool_id,
            "status": "completed",
            "content": [text_content(summary)],
        }
    )
    return ReadResult(name, text=text)


async def ask_permission(turn: Turn, tool_call: JsonObject) -> str | None:
    """The chosen option id; None if the request failed; cancel raises."""
    try:
        result = await turn.call(
            "session/request_permission",
            {
                "sessionId": turn.record.session_id,
                "toolCall": tool_call,
                "options": PERMISSION_OPTIONS,
            },
        )
    except RpcError as exc:
        log(f"permission request failed: {exc.message}")
        return None
    outcome = result.get("outcome") if isinstance(result, dict) else None
    kind = outcome.get("outcome") if isinstance(outcome, dict) else None
    if kind == "cancelled":
        raise TurnCancelled
    if kind == "selected" and isinstance(outcome, dict):
        return str(outcome.get("optionId"))
    return None


async def edit(turn: Turn) -> str:
    """``#edit``: a diff (one per file of ``#edit=a,b``), a permission request, then the writes
    (or why not)."""
    message_id = turn.new_id("msg")
    script = turn.script
    targets: list[str] = []
    for wanted in (script.edit_path or "").split(","):
        if not wanted:
            continue
        target = resolve(turn, wanted)
        if target is None:
            turn.chunk(f"I won't edit {wanted}: it is outside the workspace.", message_id=message_id)
            return "end_turn"
        targets.append(target)
    if not targets:
        targets = [readme(turn) or os.path.join(turn.cwd, "demo.txt")]
    name = ", ".join(rel(turn, target) for target in targets)
    if turn.record.mode_id == "plan":
        turn.chunk(
            f"Plan mode is on, so I will not edit {name}. My plan: append one line to it. "
            "Switch to ask or code mode to let me edit.",
            message_id=message_id,
        )
        return "end_turn"
    writes: list[tuple[str, str]] = []
    diffs: list[JsonObject] = []
    for target in targets:
        old: str | None = None
        if _is_file(target):
            try:
                old = await read_file(turn, target)
            except (RpcError, OSError) as exc:
                message = exc.message if isinstance(exc, RpcError) else str(exc)
                turn.chunk(f"I could not read {rel(turn, target)}: {message}.", message_id=message_id)
                return "end_turn"
        new = EDIT_LINE if old is None else f"{old}\n{EDIT_LINE}"
        diff_old, diff_new = old, new
        if old is not None and turn.agent.settings.diffs == "snippet":
            # Only the changed part: from the last line with text to the end, and that plus the line.
            start = old.rstrip("\n").rfind("\n") + 1
            diff_old, diff_new = old[start:], f"{old[start:]}\n{EDIT_LINE}"
        writes.append((target, new))
        diffs.append({"type": "diff", "path": target, "oldText": diff_old, "newText": diff_new})
    tool_id = turn.new_id("edit")
    tool_call: JsonObject = {
        "toolCallId": tool_id,
        "title": f"Edit {name}",
        "name": WRITE_TOOL,
        "kind": "edit",
        "status": "pending",
        "content": diffs,
        "locations": [{"path": target} for target in targets],
    }
    turn.update({"sessionUpdate": "tool_call", **tool_call})
    choice = await ask_permission(turn, tool_call)
    if choice not in ALLOW_OPTIONS:
        turn.tool_status(tool_id, "failed")
        why = "the permission request failed" if choice is None else "you rejected the edit"
        turn.chunk(f"I did not edit {name}: {why}, so it is unchanged.", message_id=message_id)
        return "end_turn"
    turn.tool_status(tool_id, "in_progress")
    for target, new in writes:
        try:
            await write_file(turn, target, new)
        except (RpcError, OSError) as exc:
            message = turn.fail_tool(tool_id, f"Could not write {rel(turn, target)}", exc)
            turn.chunk(f"Writing {rel(turn, target)} failed: {message}.", message_id=message_id)
            return "end_turn"
    turn.tool_status(tool_id, "completed")
    lines = "one line" if len(targets) == 1 else "one line each"
    turn.chunk(f"I added {lines} to {name}.", message_id=message_id)
    return "end_turn"


async def permission(turn: Turn) -> str:
    """``#permission``: ask to run a pretend command, then say what was chosen."""
    message_id = turn.new_id("msg")
    tool_id = turn.new_id("exec")
    tool_call: JsonObject = {
        "toolCallId": tool_id,
        "title": "Run `echo hello from the demo agent`",
        "name": COMMAND_TOOL,
        "kind": "execute",
        "status": "pending",
        "rawInput": {"command": ["echo", "hello from the demo agent"]},
    }
    turn.update({"sessionUpdate": "tool_call", **tool_call})
    choice = await ask_permission(turn, tool_call)
    if choice in ALLOW_OPTIONS:
        turn.update(
            {
                "sessionUpdate": "tool_call_update",
                "toolCallId": tool_id,
                "status": "completed",
                "content": [text_content("hello from the demo agent")],
            }
        )
        turn.chunk(
            f"You chose “{PERMISSION_NAMES[choice]}” ({choice}), so I ran the command.",
            message_id=message_id,
        )
    else:
        turn.tool_status(tool_id, "failed")
        label = (
            f"“{PERMISSION_NAMES[choice]}” ({choice})"
            if choice in PERMISSION_NAMES
            else f"an unknown option ({choice})"
        )
        said = "The permission request failed" if choice is None else f"You chose {label}"
        turn.chunk(f"{said}, so I did not run the command.", message_id=message_id)
    return "end_turn"
