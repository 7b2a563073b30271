"""The wire formats of the mock model: Gemini, OpenAI Responses and Chat Completions, Anthropic Messages.

Each provider reads a request, records it, asks `Script.step` what to answer and writes that answer
in its own format, streamed as server-sent events when the agent asked for a stream. Only what the
pinned agents use is implemented; `route()` returns None for anything else (a 404).
"""

from __future__ import annotations

import itertools
import json
import re
import shlex
from collections.abc import Callable, Iterable
from typing import Any, Protocol

from tests.production.mock_script import GENERIC_REPLY, Request, Script, Step, ToolCall, marker_of

_ids = itertools.count(1)


class Wire(Protocol):
    """What a provider needs of the HTTP exchange (the mock's request handler)."""

    def record(self, request: Request) -> None: ...
    def send_json(self, status: int, obj: Any) -> None: ...
    def start_sse(self) -> None: ...
    def sse(self, data: Any, event: str | None = None) -> bool: ...


Provider = Callable[[Wire, Script, str, Any], None]


def _texts(step: Step, script: Script) -> Iterable[str]:
    return script.slow_chunks() if step.slow else step.chunks


# Other agents' names for the read and edit tools, compared lower-cased and without `_`.
_SIMILAR = {
    "read": ("read", "readfile", "readtextfile", "view"),
    "edit": ("edit", "replace", "strreplacefile", "strreplace", "patch"),
}


# The shell tools: claude's own and through the client (`mcp__acp__Bash`), gemini's.
SHELLS = ("mcp__acp__Bash", "Bash", "run_shell_command")


def _pick(declared: dict[str, set[str]], names: tuple[str, ...], action: str = "") -> str:
    """The first of `names` the agent declared, else its tool of a similar name (else the first
    of `names`: the agent then reports it unknown)."""
    exact = next((n for n in names if n in declared), None)
    if exact is not None:
        return exact
    similar = _SIMILAR.get(action, ())
    return next((n for n in declared if n.lower().replace("_", "") in similar), names[0])


def _param(params: set[str], names: tuple[str, ...]) -> str:
    return next((n for n in names if n in params), names[0])


def _tool_args(
    call: ToolCall, declared: dict[str, set[str]], reads: tuple[str, ...], edits: tuple[str, ...]
) -> tuple[str, dict[str, Any]]:
    """Gemini and Anthropic agents: a read tool taking a path, an edit tool taking old/new strings,
    a shell tool taking a command."""
    if call.action == "shell":
        name = _pick(declared, SHELLS)
        return name, {"command": call.command, "description": "Run the scripted command."}
    name = _pick(declared, reads if call.action == "read" else edits, call.action)
    params = declared.get(name, set())
    args: dict[str, Any] = {_param(params, ("absolute_path", "file_path", "filePath", "path")): call.path}
    if call.action == "edit" and "edits" in params:  # pi: a list of replacements
        args["edits"] = [{"oldText": call.old, "newText": call.new}]
    elif call.action == "edit" and "edit" in params:  # Kimi's StrReplaceFile: one {old, new}
        args["edit"] = {"old": call.old, "new": call.new}
    elif call.action == "edit":
        args[_param(params, ("old_string", "old_str", "oldString", "oldText", "old_text"))] = call.old
        args[_param(params, ("new_string", "new_str", "newString", "newText", "new_text"))] = call.new
        if "instruction" in params:  # gemini-cli's replace requires it
            args["instruction"] = "Apply the scripted edit."
        if "mode" in params:  # Hermes's patch requires it: "replace" (old/new strings), or "patch"
            args["mode"] = "replace"
    return name, args


def _split(items: list[Any], user_text: Callable[[Any], str | None]) -> tuple[str, list[Any]]:
    """The latest user text, and the items after it (the turn's tool results so far).

    `user_text` answers None for items that are not the user's own text (model output, tool
    results, even when a tool-result message also carries text the agent added).
    """
    for index in range(len(items) - 1, -1, -1):
        text = user_text(items[index])
        if text is not None:
            return text, items[index + 1 :]
    return "", []


def _result_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


# ---------------------------------------------------------------------------------------- Gemini
GEMINI_PATH = re.compile(
    r"^(?:/[^/]+)?/models/(?P<model>[^/:]+):(?P<verb>streamGenerateContent|generateContent|countTokens)$"
)


def gemini(wire: Wire, script: Script, path: str, body: Any) -> None:
    match = GEMINI_PATH.match(path)
    assert match is not None
    verb = match["verb"]
    if verb == "countTokens":
        wire.record(Request("gemini", "POST", path, body))
        wire.send_json(200, {"totalTokens": 42})
        return
    contents = body.get("contents", [])
    declared = {
        decl["name"]: set(
            (decl.get("parameters") or decl.get("parametersJsonSchema") or {}).get("properties", {})
        )
        for tool in body.get("tools") or []
        for decl in tool.get("functionDeclarations") or []
    }

    def user_text(content: Any) -> str | None:
        parts = content.get("parts", [])
        if content.get("role") != "user" or any("functionResponse" in p for p in parts):
            return None
        texts = [p["text"] for p in parts if isinstance(p.get("text"), str)]
        return "\n".join(texts) if texts else None

    prompt, after = _split(contents, user_text) if declared else ("", [])
    results = [
        _result_text(part["functionResponse"].get("response"))
        for content in after
        for part in content.get("parts", [])
        if "functionResponse" in part
    ]
    scenario = marker_of(prompt)
    wire.record(Request("gemini", "POST", path, body, scenario, results, prompt))
    step = script.step(scenario, results)
    if verb == "generateContent":
        wire.send_json(200, _gemini_chunk(_gemini_side_answer(body), finish=True))
        return
    wire.start_sse()
    for text in _texts(step, script):
        if not wire.sse(_gemini_chunk(text)):
            return
    parts: list[Any] = []
    if step.tool is not None:
        name, args = _tool_args(step.tool, declared, ("read_file",), ("replace", "edit"))
        parts = [{"functionCall": {"name": name, "args": args}}]
    wire.sse(_gemini_chunk("", parts=parts, finish=True))


def _gemini_side_answer(body: Any) -> str:
    """Side requests (gemini-cli's model router, next-speaker checks): JSON ones get an object
    that fits the schema they ask for."""
    config = body.get("generationConfig") or {}
    if config.get("responseMimeType") != "application/json":
        return GENERIC_REPLY
    schema = config.get("responseJsonSchema") or config.get("responseSchema") or {}
    return json.dumps(_fit(schema))


def _fit(schema: Any) -> Any:
    kind = str(schema.get("type", "object")).lower()
    if kind == "object":
        return {name: _fit(sub) for name, sub in (schema.get("properties") or {}).items()}
    if kind == "array":
        return []
    if kind in ("integer", "number"):
        return 1
    if kind == "boolean":
        return False
    return (schema.get("enum") or ["mock"])[0]


def _gemini_chunk(text: str, *, parts: list[Any] | None = None, finish: bool = False) -> Any:
    candidate: dict[str, Any] = {
        "content": {"role": "model", "parts": parts if parts else [{"text": text}]},
        "index": 0,
    }
    if finish:
        candidate["finishReason"] = "STOP"
    return {
        "candidates": [candidate],
        "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
        "modelVersion": "mock-model",
    }


# ---------------------------------------------------------------------------------------- OpenAI
def openai_responses(wire: Wire, script: Script, path: str, body: Any) -> None:
    items = body.get("input") or []
    if isinstance(items, str):
        items = [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": items}]}]
    declared = {
        t.get("name", ""): set((t.get("parameters") or {}).get("properties", {}))
        for t in body.get("tools") or []
    }

    def user_text(item: Any) -> str | None:
        if item.get("type", "message") != "message" or item.get("role") != "user":
            return None
        content = item.get("content")
        if isinstance(content, str):
            return content
        return "\n".join(c.get("text", "") for c in content or [] if isinstance(c, dict))

    prompt, after = _split(items, user_text) if declared else ("", [])
    results = [
        _result_text(item.get("output"))
        for item in after
        if item.get("type") in ("function_call_output", "custom_tool_call_output")
    ]
    scenario = marker_of(prompt)
    wire.record(Request("openai", "POST", path, body, scenario, results, prompt))
    step = script.step(scenario, results)
    response_id = f"resp_{next(_ids)}"
    if not body.get("stream"):
        wire.send_json(
            200,
            {
                "id": response_id,
                "object": "response",
                "status": "completed",
                "output": [_openai_message(f"msg_{next(_ids)}", GENERIC_REPLY)],
                "usage": _openai_usage(),
            },
        )
        return
    wire.start_sse()
    wire.sse({"type": "response.created", "response": {"id": response_id}}, "response.created")
    output: list[Any] = []
    message_id = f"msg_{next(_ids)}"
    sent = ""
    for text in _texts(step, script):
        if not sent:
            added = {"type": "message", "id": message_id, "role": "assistant", "content": []}
            wire.sse(
                {"type": "response.output_item.added", "output_index": 0, "item": added},
                "response.output_item.added",
            )
        delta = {
            "type": "response.output_text.delta",
            "item_id": message_id,
            "output_index": 0,
            "content_index": 0,
            "delta": text,
        }
        if not wire.sse(delta, "response.output_text.delta"):
            return
        sent += text
    if sent:
        output.append(_openai_message(message_id, sent))
    if step.tool is not None:
        output.append(_openai_tool_call(step.tool, declared))
    for index, item in enumerate(output):
        wire.sse(
            {"type": "response.output_item.done", "output_index": index, "item": item},
            "response.output_item.done",
        )
    completed = {
        "id": response_id,
        "object": "response",
        "status": "completed",
        "output": output,
        "usage": _openai_usage(),
    }
    wire.sse({"type": "response.completed", "response": completed}, "response.completed")


def _openai_message(message_id: str, text: str) -> Any:
    return {
        "type": "message",
        "id": message_id,
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }


def _openai_usage() -> Any:
    return {
        "input_tokens": 10,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 5,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 15,
    }


def _openai_tool_call(call: ToolCall, declared: dict[str, set[str]]) -> Any:
    """codex runs everything through `exec_command`: a read is `cat`; an edit is a command run with
    `require_escalated`, which makes codex ask permission. (Its `apply_patch` needs the bubblewrap
    sandbox even to read the file, and bubblewrap is not installed, so it fails without asking.)"""
    call_id = f"call_{next(_ids)}"
    name = "exec_command"
    if call.action == "read":
        arguments: dict[str, Any] = {"cmd": f"cat {shlex.quote(call.path)}"}
    elif call.action == "shell":  # escalated like the edit: no bubblewrap here for its sandbox
        arguments = {
            "cmd": call.command,
            "sandbox_permissions": "require_escalated",
            "justification": "Do you want to run the scripted command?",
        }
    elif call.action == "ask":
        name = "request_user_input"
        question = {
            "id": "colour",
            "header": "Colour",
            "question": "Which colour should the button be?",
            "options": [
                {"label": "Blue (Recommended)", "description": "Matches the theme."},
                {"label": "Red", "description": "Stands out."},
            ],
        }
        arguments = {"questions": [question]}
    else:
        code = (
            f"import pathlib; p = pathlib.Path({call.path!r}); "
            f"p.write_text(p.read_text().replace({call.old!r}, {call.new!r}, 1))"
        )
        arguments = {
            "cmd": f"python3 -c {shlex.quote(code)}",
            "sandbox_permissions": "require_escalated",
            "justification": "Do you want to apply the scripted edit?",
        }
    return {
        "type": "function_call",
        "id": f"fc_{call_id}",
        "call_id": call_id,
        "name": name,
        "arguments": json.dumps(arguments),
        "status": "completed",
    }


# ------------------------------------------------------------------------------- Chat Completions
def openai_chat(wire: Wire, script: Script, path: str, body: Any) -> None:
    messages = body.get("messages") or []
    declared = {
        (t.get("function") or {}).get("name", ""): set(
            ((t.get("function") or {}).get("parameters") or {}).get("properties", {})
        )
        for t in body.get("tools") or []
    }

    def user_text(message: Any) -> str | None:
        if message.get("role") != "user":
            return None
        content = message.get("content")
        if isinstance(content, str):
            return content
        return "\n".join(c.get("text", "") for c in content or [] if isinstance(c, dict))

    prompt, after = _split(messages, user_text) if declared else ("", [])
    results = [_result_text(m.get("content")) for m in after if m.get("role") == "tool"]
    scenario = marker_of(prompt)
    wire.record(Request("openai", "POST", path, body, scenario, results, prompt))
    step = script.step(scenario, results) if declared else Step(chunks=[GENERIC_REPLY])
    chat_id = f"chatcmpl-{next(_ids)}"
    model = body.get("model", "mock-model")
    call = None
    if step.tool is not None:
        name, args = _chat_tool_args(step.tool, declared)
        call = {
            "id": f"call_{next(_ids)}",
            "type": "function",
            "function": {"name": name, "arguments": json.dumps(args)},
        }
    usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
    if not body.get("stream"):
        message: dict[str, Any] = {
            "role": "assistant",
            "content": None if call else "".join(_texts(step, script)),
        }
        if call:
            message["tool_calls"] = [call]
        choice = {"index": 0, "message": message, "finish_reason": "tool_calls" if call else "stop"}
        wire.send_json(
            200,
            {"id": chat_id, "object": "chat.completion", "model": model, "choices": [choice], "usage": usage},
        )
        return

    def chunk(delta: Any, finish: str | None = None) -> Any:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return {
            "id": chat_id,
            "object": "chat.completion.chunk",
            "created": 0,
            "model": model,
            "choices": [choice],
        }

    wire.start_sse()
    wire.sse(chunk({"role": "assistant", "content": ""}))
    for text in _texts(step, script):
        if not wire.sse(chunk({"content": text})):
            return
    if call:
        wire.sse(chunk({"tool_calls": [{"index": 0, **call}]}))
    wire.sse(chunk({}, "tool_calls" if call else "stop"))
    wire.sse(
        {"id": chat_id, "object": "chat.completion.chunk", "model": model, "choices": [], "usage": usage}
    )
    wire.sse("[DONE]")


# Tools that write a whole file, compared lower-cased and without `_`.
_WRITES = ("writefile", "writetextfile")


def _chat_tool_args(call: ToolCall, declared: dict[str, set[str]]) -> tuple[str, dict[str, Any]]:
    """A read tool taking a path and an edit tool taking old/new strings; where the agent has
    neither, a whole-file write (fast-agent's `write_text_file(path, content)`), or Cline's
    shapes: `read_files` of a list, `apply_patch` in the codex patch grammar."""
    editor = _command_editor(declared)
    if call.action in ("read", "edit") and editor is not None:
        return editor, _command_editor_args(call, declared[editor])
    name, args = _tool_args(call, declared, ("view", "read_file"), ("edit", "str_replace"))
    if name in declared:
        return name, args
    if call.action == "read" and "read_files" in declared:
        return "read_files", {"files": [{"path": call.path}]}
    write = next((n for n in declared if n.lower().replace("_", "") in _WRITES), None)
    if call.action == "edit" and write is not None:  # fast-agent: only a whole-file write
        return write, {_param(declared[write], ("file_path", "path")): call.path, "content": call.text}
    if call.action == "edit" and "apply_patch" in declared:
        patch = (
            f"*** Begin Patch\n*** Update File: {call.path}\n@@\n-{call.old}\n+{call.new}\n*** End Patch\n"
        )
        return "apply_patch", {"input": patch}
    return name, args


def _command_editor(declared: dict[str, set[str]]) -> str | None:
    """One tool that views, creates and edits files by a `command` argument (OpenHands'
    `file_editor`, in the shape of `str_replace_editor`): it takes a path and old/new strings."""
    return next(
        (n for n, params in declared.items() if {"command", "path", "old_str", "new_str"} <= params),
        None,
    )


def _command_editor_args(call: ToolCall, params: set[str]) -> dict[str, Any]:
    args: dict[str, Any] = {"command": "view" if call.action == "read" else "str_replace", "path": call.path}
    if call.action == "edit":
        args.update(old_str=call.old, new_str=call.new)
    # OpenHands requires these of every action (its security analyser and its summary line).
    if "security_risk" in params:
        args["security_risk"] = "LOW"
    if "summary" in params:
        args["summary"] = f"Scripted {call.action} of {call.path}"
    return args


# ---------------------------------------------------------------------------------------- Anthropic
def anthropic_messages(wire: Wire, script: Script, path: str, body: Any) -> None:
    if path.endswith("/count_tokens"):
        wire.record(Request("anthropic", "POST", path, body))
        wire.send_json(200, {"input_tokens": 42})
        return
    messages = body.get("messages") or []
    declared = {
        t.get("name", ""): set((t.get("input_schema") or {}).get("properties", {}))
        for t in body.get("tools") or []
    }

    def user_text(message: Any) -> str | None:
        content = message.get("content")
        if message.get("role") != "user":
            return None
        if isinstance(content, str):
            return content
        if any(c.get("type") == "tool_result" for c in content or []):
            return None
        return "\n".join(c.get("text", "") for c in content or [] if c.get("type") == "text")

    prompt, after = _split(messages, user_text) if declared else ("", [])
    results = [
        _result_text(block.get("content"))
        for message in after
        if isinstance(message.get("content"), list)
        for block in message["content"]
        if block.get("type") == "tool_result"
    ]
    scenario = marker_of(prompt)
    wire.record(Request("anthropic", "POST", path, body, scenario, results, prompt))
    step = script.step(scenario, results)
    message_id = f"msg_{next(_ids)}"
    model = body.get("model", "mock-model")
    if not body.get("stream"):
        wire.send_json(
            200,
            {
                "id": message_id,
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": [{"type": "text", "text": GENERIC_REPLY}],
                "stop_reason": "end_turn",
                "stop_sequence": None,
                "usage": {"input_tokens": 10, "output_tokens": 5},
            },
        )
        return
    wire.start_sse()
    start = {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 1},
    }
    wire.sse({"type": "message_start", "message": start}, "message_start")
    index = 0
    opened = False
    for text in _texts(step, script):
        if not opened:
            block = {
                "type": "content_block_start",
                "index": index,
                "content_block": {"type": "text", "text": ""},
            }
            wire.sse(block, "content_block_start")
            opened = True
        delta = {"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": text}}
        if not wire.sse(delta, "content_block_delta"):
            return
    if opened:
        wire.sse({"type": "content_block_stop", "index": index}, "content_block_stop")
        index += 1
    stop_reason = "end_turn"
    if step.tool is not None:
        name, args = _tool_args(step.tool, declared, ("mcp__acp__Read", "Read"), ("mcp__acp__Edit", "Edit"))
        use = {"type": "tool_use", "id": f"toolu_{next(_ids)}", "name": name, "input": {}}
        wire.sse({"type": "content_block_start", "index": index, "content_block": use}, "content_block_start")
        partial = {"type": "input_json_delta", "partial_json": json.dumps(args)}
        wire.sse({"type": "content_block_delta", "index": index, "delta": partial}, "content_block_delta")
        wire.sse({"type": "content_block_stop", "index": index}, "content_block_stop")
        stop_reason = "tool_use"
    final = {
        "type": "message_delta",
        "delta": {"stop_reason": stop_reason, "stop_sequence": None},
        "usage": {"output_tokens": 5},
    }
    wire.sse(final, "message_delta")
    wire.sse({"type": "message_stop"}, "message_stop")


# ------------------------------------------------------------------------------- model listings
MODELS_PATH = re.compile(r"^(?:/v1)?/models(?:/(?P<model>[^/]+))?$")
# What agents that look for a local model server ask to tell which one it is (Hermes): LM Studio,
# Ollama (its tags; `show` for a model's context), llama.cpp, vLLM. The mock is none of them: a
# 404, as an OpenAI-compatible server answers, recorded as a probe (not an unknown request).
SERVER_PROBES = frozenset(
    {
        ("GET", "/api/v1/models"),
        ("GET", "/api/tags"),
        ("POST", "/api/show"),
        ("GET", "/v1/props"),
        ("GET", "/props"),
        ("GET", "/version"),
    }
)


def openai_models(wire: Wire, script: Script, path: str, body: Any) -> None:
    """OpenAI's model list (`GET /v1/models`) and one model (`GET /v1/models/<id>`)."""
    match = MODELS_PATH.match(path)
    assert match is not None
    wire.record(Request("openai", "GET", path, body))

    def model(model_id: str) -> Any:
        return {"id": model_id, "object": "model", "created": 0, "owned_by": "mock"}

    one = match["model"]
    wire.send_json(200, model(one) if one else {"object": "list", "data": [model("mock-model")]})


def _not_this_server(method: str) -> Provider:
    def answer(wire: Wire, script: Script, path: str, body: Any) -> None:
        wire.record(Request("probe", method, path, body))
        error = {"code": 404, "message": f"mock model: not this kind of server ({method} {path})"}
        wire.send_json(404, {"error": {**error, "type": "not_found"}})

    return answer


def route(method: str, path: str) -> Provider | None:
    if (method, path) in SERVER_PROBES:
        return _not_this_server(method)
    if method == "GET" and MODELS_PATH.match(path):
        return openai_models
    if method == "POST" and GEMINI_PATH.match(path):
        return gemini
    if method == "POST" and path.endswith("/responses"):
        return openai_responses
    if method == "POST" and path.endswith("/chat/completions"):
        return openai_chat
    if method == "POST" and path.startswith("/v1/messages"):
        return anthropic_messages
    return None
