"""The mock model on its own (no agent): routes, refusals, scenario choice, stream formats."""

from __future__ import annotations

import http.client
import json
import shlex
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.production.mock_model import MockModel
from tests.production.mock_script import EDIT_FAILED_REPLY, EDIT_REPLY, TEXT_REPLY, read_reply


@pytest.fixture
def model() -> Iterator[MockModel]:
    with MockModel() as mock:
        yield mock


def post(mock: MockModel, path: str, body: Any, method: str = "POST") -> tuple[int, str]:
    host, port = mock.base_url.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=10)
    try:
        conn.request(method, path, body=json.dumps(body), headers={"Content-Type": "application/json"})
        response = conn.getresponse()
        return response.status, response.read().decode()
    finally:
        conn.close()


def events(stream: str) -> list[Any]:
    return [json.loads(line[6:]) for line in stream.splitlines() if line.startswith("data: ")]


def test_unknown_paths_answer_a_clear_404(model: MockModel) -> None:
    status, text = post(model, "/v1/nothing/here", {})
    assert status == 404
    assert "no route for POST /v1/nothing/here" in json.loads(text)["error"]["message"]
    assert model.unknown == ["POST /v1/nothing/here"]


def test_proxy_requests_are_refused_at_once(model: MockModel) -> None:
    host, port = model.base_url.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=10)
    conn.request("CONNECT", "api.example.com:443")
    assert conn.getresponse().status == 403
    conn.close()
    assert [(r.provider, r.path) for r in model.requests] == [("proxy", "api.example.com:443")]


def anthropic_tools() -> list[Any]:
    schema: dict[str, Any] = {"properties": {"file_path": {}, "old_string": {}, "new_string": {}}}
    return [{"name": "Read", "input_schema": schema}, {"name": "Edit", "input_schema": schema}]


def test_anthropic_text_streams_in_chunks(model: MockModel) -> None:
    body = {
        "stream": True,
        "tools": anthropic_tools(),
        "messages": [{"role": "user", "content": "Hi [mock:text]"}],
    }
    status, stream = post(model, "/v1/messages", body)
    assert status == 200
    deltas = [e["delta"]["text"] for e in events(stream) if e["type"] == "content_block_delta"]
    assert len(deltas) == 4 and "".join(deltas) == TEXT_REPLY
    assert events(stream)[-1] == {"type": "message_stop"}


def test_edit_reads_then_edits_then_answers(model: MockModel, tmp_path: Path) -> None:
    model.script.edit_path, model.script.edit_old, model.script.edit_new = tmp_path / "f.py", "a = 1", "a = 2"
    messages: list[Any] = [{"role": "user", "content": [{"type": "text", "text": "Edit [mock:edit]"}]}]
    calls = []
    for result in ("1\ta = 1", "The file has been updated."):
        _, stream = post(
            model, "/v1/messages", {"stream": True, "tools": anthropic_tools(), "messages": messages}
        )
        start = next(e for e in events(stream) if e["type"] == "content_block_start")
        delta = next(e for e in events(stream) if e["type"] == "content_block_delta")
        calls.append((start["content_block"]["name"], json.loads(delta["delta"]["partial_json"])))
        use_id = start["content_block"]["id"]
        messages.append({"role": "assistant", "content": [start["content_block"]]})
        # A tool result that also carries text (as claude-agent-acp sends) is not the user's prompt.
        messages.append(
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": use_id, "content": result},
                    {"type": "text", "text": "<system-reminder>no marker</system-reminder>"},
                ],
            }
        )
    path = str(tmp_path / "f.py")
    assert calls == [
        ("Read", {"file_path": path}),
        ("Edit", {"file_path": path, "old_string": "a = 1", "new_string": "a = 2"}),
    ]
    _, stream = post(
        model, "/v1/messages", {"stream": True, "tools": anthropic_tools(), "messages": messages}
    )
    assert "".join(
        e["delta"].get("text", "") for e in events(stream) if e["type"] == "content_block_delta"
    ) == (EDIT_REPLY)
    assert [len(r.tool_results) for r in model.of("edit")] == [0, 1, 2]


def test_gemini_read_answers_with_the_tokens_of_the_tool_result(model: MockModel, tmp_path: Path) -> None:
    model.script.read_path = tmp_path / "notes.md"
    tools = [
        {"functionDeclarations": [{"name": "read_file", "parameters": {"properties": {"file_path": {}}}}]}
    ]
    contents: list[Any] = [{"role": "user", "parts": [{"text": "Read [mock:read]"}]}]
    path = "/v1beta/models/m:streamGenerateContent"
    _, stream = post(model, path + "?alt=sse", {"contents": contents, "tools": tools})
    call = events(stream)[-1]["candidates"][0]["content"]["parts"][0]["functionCall"]
    assert call == {"name": "read_file", "args": {"file_path": str(tmp_path / "notes.md")}}
    contents.append({"role": "model", "parts": [{"functionCall": call}]})
    response = {"output": "It says TOKEN-0123abcd."}
    contents.append(
        {"role": "user", "parts": [{"functionResponse": {"name": "read_file", "response": response}}]}
    )
    _, stream = post(model, path + "?alt=sse", {"contents": contents, "tools": tools})
    texts = [p.get("text", "") for e in events(stream) for p in e["candidates"][0]["content"]["parts"]]
    assert "".join(texts) == read_reply(["TOKEN-0123abcd"])


def test_side_requests_get_json_that_fits_their_schema(model: MockModel) -> None:
    schema = {"type": "OBJECT", "properties": {"why": {"type": "STRING"}, "score": {"type": "INTEGER"}}}
    config = {"responseMimeType": "application/json", "responseJsonSchema": schema}
    body = {
        "contents": [{"role": "user", "parts": [{"text": "route [mock:text]"}]}],
        "generationConfig": config,
    }
    status, text = post(model, "/v1beta/models/m:generateContent", body)
    assert status == 200
    answer = json.loads(json.loads(text)["candidates"][0]["content"]["parts"][0]["text"])
    assert answer == {"why": "mock", "score": 1}
    assert model.requests[-1].scenario == ""  # no tools offered: not the agent's main loop


def test_openai_edit_asks_for_an_escalated_command(model: MockModel, tmp_path: Path) -> None:
    model.script.edit_path, model.script.edit_old, model.script.edit_new = tmp_path / "f.py", "a = 1", "a = 2"
    user = {
        "type": "message",
        "role": "user",
        "content": [{"type": "input_text", "text": "Edit [mock:edit]"}],
    }
    read_output = {"type": "function_call_output", "call_id": "c1", "output": "a = 1"}
    body = {
        "stream": True,
        "tools": [{"type": "function", "name": "exec_command"}],
        "input": [user, read_output],
    }
    _, stream = post(model, "/v1/responses", body)
    done = [e["item"] for e in events(stream) if e["type"] == "response.output_item.done"]
    assert [item["name"] for item in done] == ["exec_command"]
    arguments = json.loads(done[0]["arguments"])
    assert arguments["sandbox_permissions"] == "require_escalated"
    program, flag, code = shlex.split(arguments["cmd"])
    assert (program, flag) == ("python3", "-c") and ".replace('a = 1', 'a = 2', 1)" in code
    assert events(stream)[-1]["type"] == "response.completed"


def test_chat_completions_calls_the_agents_own_read_tool_then_streams_text(model: MockModel) -> None:
    """Copilot's `view(path)`, streamed: the tool call, then (with its result) the reply and [DONE]."""
    model.script.read_path = Path("/ws/notes.md")
    view = {"type": "function", "function": {"name": "view", "parameters": {"properties": {"path": {}}}}}
    body: dict[str, Any] = {
        "model": "gpt-4.1",
        "stream": True,
        "tools": [view],
        "messages": [{"role": "user", "content": "Read it [mock:read]"}],
    }
    status, stream = post(model, "/v1/chat/completions", body)
    assert status == 200
    data = [line[6:] for line in stream.splitlines() if line.startswith("data: ")]
    assert data[-1] == "[DONE]"
    chunks = [json.loads(d) for d in data[:-1]]
    (call,) = [t for c in chunks for ch in c["choices"] for t in ch["delta"].get("tool_calls", [])]
    assert call["function"]["name"] == "view"
    assert json.loads(call["function"]["arguments"]) == {"path": "/ws/notes.md"}
    assert [ch["finish_reason"] for c in chunks for ch in c["choices"] if ch["finish_reason"]] == [
        "tool_calls"
    ]

    body["messages"] += [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{k: call[k] for k in ("id", "type", "function")}],
        },
        {"role": "tool", "tool_call_id": call["id"], "content": "The word is TOKEN-0badc0de."},
    ]
    body["stream"] = False
    status, text = post(model, "/v1/chat/completions", body)
    assert status == 200
    (choice,) = json.loads(text)["choices"]
    assert choice["message"]["content"] == read_reply(["TOKEN-0badc0de"])
    assert choice["finish_reason"] == "stop"


def test_chat_completions_edit_takes_kimis_single_edit_object(model: MockModel) -> None:
    """Kimi's `StrReplaceFile(path, edit: {old, new})`, found by its similar name, after the read."""
    model.script.edit_path = Path("/ws/a.py")
    model.script.edit_old, model.script.edit_new = "a = 1", "a = 2"
    params = {"properties": {"path": {}, "edit": {}}}
    replace = {"type": "function", "function": {"name": "StrReplaceFile", "parameters": params}}
    body: dict[str, Any] = {
        "model": "mock-model",
        "tools": [replace],
        "messages": [
            {"role": "user", "content": "Change it [mock:edit]"},
            {"role": "assistant", "content": None, "tool_calls": []},
            {"role": "tool", "tool_call_id": "call_1", "content": "a = 1"},
        ],
    }
    status, text = post(model, "/v1/chat/completions", body)
    assert status == 200
    (call,) = json.loads(text)["choices"][0]["message"]["tool_calls"]
    assert call["function"]["name"] == "StrReplaceFile"
    arguments = json.loads(call["function"]["arguments"])
    assert arguments == {"path": "/ws/a.py", "edit": {"old": "a = 1", "new": "a = 2"}}


def test_chat_completions_edit_writes_the_whole_file_where_the_agent_only_writes(model: MockModel) -> None:
    """fast-agent's `write_text_file(path, content)`: the text its read returned, with the edit;
    a declined write is answered as a failed edit."""
    model.script.edit_path = Path("/ws/a.py")
    model.script.edit_old, model.script.edit_new = "a = 1", "a = 2"
    tools = [
        {"type": "function", "function": {"name": name, "parameters": {"properties": params}}}
        for name, params in (
            ("read_text_file", {"path": {}}),
            ("write_text_file", {"path": {}, "content": {}}),
        )
    ]
    messages: list[Any] = [
        {"role": "user", "content": "Change it [mock:edit]"},
        {"role": "assistant", "content": None, "tool_calls": []},
        {"role": "tool", "tool_call_id": "call_1", "content": "a = 1\nb = 'kept'\n"},
    ]
    body: dict[str, Any] = {"model": "mock-model", "tools": tools, "messages": messages}
    status, text = post(model, "/v1/chat/completions", body)
    assert status == 200
    (call,) = json.loads(text)["choices"][0]["message"]["tool_calls"]
    assert call["function"]["name"] == "write_text_file"
    arguments = json.loads(call["function"]["arguments"])
    assert arguments == {"path": "/ws/a.py", "content": "a = 2\nb = 'kept'\n"}

    declined = "The user has declined permission to use this tool: write_text_file"
    messages += [
        {"role": "assistant", "content": None, "tool_calls": []},
        {"role": "tool", "tool_call_id": "call_2", "content": declined},
    ]
    status, text = post(model, "/v1/chat/completions", body)
    assert status == 200
    assert json.loads(text)["choices"][0]["message"]["content"] == EDIT_FAILED_REPLY


def test_model_listings_answer_and_server_type_probes_are_refused_as_known(model: MockModel) -> None:
    status, text = post(model, "/v1/models", None, "GET")
    assert status == 200 and [m["id"] for m in json.loads(text)["data"]] == ["mock-model"]
    status, text = post(model, "/v1/models/mock-model", None, "GET")
    assert status == 200 and json.loads(text)["id"] == "mock-model"
    for method, path in (("GET", "/api/tags"), ("POST", "/api/show"), ("GET", "/version")):
        status, text = post(model, path, {}, method)
        assert status == 404 and "not this kind of server" in text, (method, path, text)
    assert not model.unknown
    assert [r.provider for r in model.requests] == ["openai", "openai", "probe", "probe", "probe"]


def test_chat_completions_drives_a_single_editor_tool_by_its_command(model: MockModel) -> None:
    """OpenHands' `file_editor(command, path, old_str, new_str, ..., security_risk, summary)`,
    beside a `terminal(command)` that is not an editor: a `view` for the read, then a
    `str_replace` for the edit, with the fields it requires."""
    model.script.edit_path = Path("/ws/a.py")
    model.script.edit_old, model.script.edit_new = "a = 1", "a = 2"
    names = ("command", "path", "file_text", "old_str", "new_str", "security_risk", "summary")
    editor = {"name": "file_editor", "parameters": {"properties": {key: {} for key in names}}}
    terminal = {"name": "terminal", "parameters": {"properties": {"command": {}}}}
    body: dict[str, Any] = {
        "model": "mock-model",
        "tools": [{"type": "function", "function": f} for f in (terminal, editor)],
        "messages": [{"role": "user", "content": "Change it [mock:edit]"}],
    }

    def called() -> tuple[str, Any]:
        status, text = post(model, "/v1/chat/completions", body)
        assert status == 200
        (call,) = json.loads(text)["choices"][0]["message"]["tool_calls"]
        return call["function"]["name"], json.loads(call["function"]["arguments"])

    name, arguments = called()
    assert name == "file_editor"
    assert (arguments["command"], arguments["path"], arguments["security_risk"]) == (
        "view",
        "/ws/a.py",
        "LOW",
    )
    assert "summary" in arguments
    body["messages"] += [
        {"role": "assistant", "content": None, "tool_calls": []},
        {"role": "tool", "tool_call_id": "call_1", "content": "a = 1"},
    ]
    name, arguments = called()
    assert name == "file_editor"
    assert {k: arguments[k] for k in ("command", "path", "old_str", "new_str")} == {
        "command": "str_replace",
        "path": "/ws/a.py",
        "old_str": "a = 1",
        "new_str": "a = 2",
    }
