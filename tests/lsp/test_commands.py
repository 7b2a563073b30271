"""Every command's success and error paths, positional shortcuts, options."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException

from tests.lsp.editor import PROFILES, open_editor


async def expect_error(ed: Any, name: str, *args: Any) -> JsonRpcException:
    with pytest.raises(JsonRpcException) as info:
        await ed.command(name, *args)
    assert info.value.message, "errors carry a human message"
    return info.value


async def test_commands_are_advertised(workspace: Path, state_dir: Path) -> None:
    async with open_editor("helix", workspace, state_dir) as ed:
        assert ed.init_result is not None
        provider = ed.init_result.capabilities.execute_command_provider
        assert provider is not None
        assert set(provider.commands) == {
            "acp.session.new",
            "acp.session.list",
            "acp.session.load",
            "acp.session.transcript",
            "acp.session.delete",
            "acp.session.fork",
            "acp.logout",
            "acp.prompt",
            "acp.cancel",
            "acp.terminal.kill",
            "acp.session.rename",
            "acp.session.setMode",
            "acp.session.setModel",
            "acp.session.setConfigOption",
            "acp.edit.apply",
            "acp.edit.proposals",
            "acp.permission.respond",
            "acp.elicitation.respond",
            "acp.elicitation.answer",
            "acp.authenticate",
            "acp.agents",
            "acp.status",
            "acp.changes.list",
            "acp.changes.revert",
            "acp.changes.keep",
            "acp.changes.show",
        }
        assert ed.init_result.server_info is not None and ed.init_result.server_info.name == "acp-sidecar"


@pytest.mark.parametrize("profile", PROFILES)
async def test_error_paths(profile: str, workspace: Path, state_dir: Path, tmp_path: Path) -> None:
    async with open_editor(profile, workspace, state_dir) as ed:
        err = await expect_error(ed, "acp.session.load", {"sessionId": "no-such-session"})
        assert "unknown session" in err.message
        err = await expect_error(ed, "acp.cancel", {})
        assert "no active session" in err.message
        err = await expect_error(ed, "acp.session.rename", {"title": "x"})
        assert "no active session" in err.message
        err = await expect_error(ed, "acp.session.new", {"cwd": "relative/dir"})
        assert "absolute" in err.message and err.code == -32602
        err = await expect_error(ed, "acp.session.new", {"cwd": str(tmp_path / "missing")})
        assert "not an existing directory" in err.message
        err = await expect_error(ed, "acp.prompt", {"text": 42})
        assert "text" in err.message and err.code == -32602
        err = await expect_error(ed, "acp.prompt", {"text": "   "})
        assert "non-empty" in err.message
        err = await expect_error(ed, "acp.prompt", 1, 2)
        assert "one argument" in err.message
        err = await expect_error(ed, "acp.status", "positional")
        assert "one argument" in err.message
        err = await expect_error(ed, "acp.no.such.command", {})
        assert "not defined" in err.message
        sid = (await ed.command("acp.session.new", {}))["sessionId"]
        err = await expect_error(ed, "acp.prompt", {"text": "hi", "sessionId": "nope"})
        assert "unknown session" in err.message
        err = await expect_error(ed, "acp.session.rename", {"title": "\x1b[31m\n\t"})
        assert "title" in err.message
        err = await expect_error(ed, "acp.session.rename", {"title": "x" * 600})
        assert "500" in err.message
        err = await expect_error(ed, "acp.session.setMode", "warp-speed")
        assert "unknown mode" in err.message and "ask" in err.message
        err = await expect_error(ed, "acp.session.setModel", "gpt-99")
        assert "demo-fast" in err.message
        err = await expect_error(ed, "acp.session.setConfigOption", {"configId": "nope", "value": "x"})
        assert "unknown config option" in err.message
        err = await expect_error(ed, "acp.session.setConfigOption", {"configId": "model", "value": 3})
        assert "value" in err.message
        err = await expect_error(ed, "acp.edit.apply", {"sessionId": sid, "toolCallId": "nope"})
        assert "no diff" in err.message
        err = await expect_error(ed, "acp.permission.respond", {"requestId": "perm-9", "optionId": "x"})
        assert "no pending permission" in err.message
        err = await expect_error(ed, "acp.authenticate", "demo-login")
        assert "unknown auth method" in err.message
        err = await expect_error(ed, "acp.session.list", {"refresh": "yes"})
        assert "refresh" in err.message
        # The sidecar is still fine after all of that.
        _, end = await ed.prompt_and_wait("#chunks=2 still alive?")
        assert end["stopReason"] == "end_turn"


@pytest.mark.parametrize("profile", ["helix", "vscode"])
async def test_positional_shortcuts(profile: str, workspace: Path, state_dir: Path) -> None:
    async with open_editor(profile, workspace, state_dir) as ed:
        admitted = await ed.command("acp.prompt", "#chunks=2 hello from helix")
        await ed.wait_turn_end(admitted["turnId"])
        sid = admitted["sessionId"]
        assert await ed.command("acp.session.setMode", "code") == {}
        assert await ed.command("acp.session.setModel", "demo-smart") == {}
        status = await ed.command("acp.status")
        assert status["mode"] == "Code" and status["model"] == "Demo Smart"
        # Several quoted strings (Helix: `"Fix" "auth"`, each argument parsed as JSON) are joined.
        renamed = await ed.command("acp.session.rename", "Fix", "auth", "timeout")
        assert renamed == {"sessionId": sid, "requestedTitle": "Fix auth timeout"}
        info = await ed.wait_for("acp/sessionInfo", lambda i: i["renameState"] == "confirmed")
        assert info["title"] == "Fix auth timeout"
        second = (await ed.command("acp.session.new"))["sessionId"]
        assert second != sid
        assert (await ed.command("acp.session.load", sid))["sessionId"] == sid
        assert (await ed.command("acp.status"))["sessionId"] == sid


async def test_config_option_and_model_switch_during_a_running_prompt(
    workspace: Path, state_dir: Path
) -> None:
    async with open_editor("vscode", workspace, state_dir) as ed:
        await ed.command("acp.session.new")
        result = await ed.command("acp.session.setConfigOption", {"configId": "verbosity", "value": "terse"})
        verbosity = next(o for o in result["configOptions"] if o["id"] == "verbosity")
        assert verbosity["currentValue"] == "terse"
        admitted = await ed.command("acp.prompt", "#chunks=20 #slow=50 long one")
        await ed.wait_for("acp/turn", lambda t: t["turnId"] == admitted["turnId"] and t["state"] == "running")
        assert await ed.command("acp.session.setModel", {"modelId": "demo-smart"}) == {}
        status = await ed.command("acp.status")
        assert status["model"] == "Demo Smart" and status["state"] == "running"
        end = await ed.wait_turn_end(admitted["turnId"])
        assert end["stopReason"] == "end_turn"
        assert ed.text_of(admitted["turnId"]) == "".join(f"c{i} " for i in range(20))


async def test_legacy_set_model_fallback(workspace: Path, state_dir: Path) -> None:
    async with open_editor("vscode", workspace, state_dir, env={"ACP_DEMO_CAPS": "legacy-model"}) as ed:
        await ed.command("acp.session.new")
        assert await ed.command("acp.session.setModel", "demo-smart") == {}
        assert (await ed.command("acp.status"))["model"] == "Demo Smart"


async def test_capability_missing_is_a_clear_error(workspace: Path, state_dir: Path) -> None:
    env = {"ACP_DEMO_CAPS": "no-list,no-resume,no-load"}
    async with open_editor("vscode", workspace, state_dir, env=env) as ed:
        sid = (await ed.command("acp.session.new"))["sessionId"]
        err = await expect_error(ed, "acp.session.list", {"refresh": True})
        assert "session/list" in err.message
        # Loading the session already attached needs nothing from the agent.
        assert (await ed.command("acp.session.load", sid))["sessionId"] == sid
    async with open_editor("vscode", workspace, state_dir, env=env) as ed:
        err = await expect_error(ed, "acp.session.load", sid)
        assert "neither session/resume nor session/load" in err.message
        listed = await ed.command("acp.session.list")
        assert [s["sessionId"] for s in listed["sessions"]] == [sid]


async def test_auth_required_names_methods_and_command(workspace: Path, state_dir: Path) -> None:
    async with open_editor("vscode", workspace, state_dir, env={"ACP_DEMO_CAPS": "auth"}) as ed:
        err = await expect_error(ed, "acp.session.new")
        assert err.code == -32000
        assert "demo-login" in err.message and "acp.authenticate" in err.message
        assert await ed.command("acp.authenticate", "demo-login") == {}
        assert (await ed.command("acp.session.new"))["sessionId"]


async def test_logout_asks_for_a_login_again_and_keeps_the_sessions(workspace: Path, state_dir: Path) -> None:
    async with open_editor("helix", workspace, state_dir, env={"ACP_DEMO_CAPS": "auth"}) as ed:
        assert await ed.command("acp.authenticate", "demo-login") == {}
        sid = (await ed.command("acp.session.new"))["sessionId"]
        (agent,) = (await ed.command("acp.agents"))["agents"]
        assert agent["capabilities"]["logout"] is True
        assert await ed.command("acp.logout", "demo") == {}  # the positional form: the agent's name
        err = await expect_error(ed, "acp.session.new")
        assert err.code == -32000 and "acp.authenticate" in err.message
        listed = await ed.command("acp.session.list", {})
        assert [s["sessionId"] for s in listed["sessions"]] == [sid]
        assert await ed.command("acp.authenticate", "demo-login") == {}
        assert (await ed.command("acp.session.new"))["sessionId"] != sid


async def test_logout_of_an_agent_that_does_not_offer_it_is_a_clear_error(
    workspace: Path, state_dir: Path
) -> None:
    async with open_editor("vscode", workspace, state_dir) as ed:
        await ed.command("acp.session.new")
        (agent,) = (await ed.command("acp.agents"))["agents"]
        assert agent["capabilities"]["logout"] is False
        err = await expect_error(ed, "acp.logout", {})
        assert (err.code, err.message) == (-32006, "the agent does not offer logout")
        err = await expect_error(ed, "acp.logout", {"agent": "nobody"})
        assert "unknown agent 'nobody'" in err.message
        await ed.prompt_and_wait("#chunks=1 still here")


async def test_queue_full_is_a_clear_error_and_loses_nothing(workspace: Path, state_dir: Path) -> None:
    async with open_editor("vscode", workspace, state_dir) as ed:
        await ed.command("acp.session.new")
        running = await ed.command("acp.prompt", "#chunks=40 #slow=50 hold the line")
        await ed.wait_for("acp/turn", lambda t: t["turnId"] == running["turnId"] and t["state"] == "running")
        queued = [await ed.command("acp.prompt", f"#chunks=1 q{i}") for i in range(16)]
        assert [q["position"] for q in queued] == list(range(1, 17))
        err = await expect_error(ed, "acp.prompt", "#chunks=1 one too many")
        assert "queue" in err.message and "full" in err.message
        await ed.command("acp.cancel")
        for turn in [running, *queued]:
            await ed.wait_turn_end(turn["turnId"])
        for q in queued:
            assert ed.text_of(q["turnId"]) == "c0 "
            assert len([t for t in ed.turn_events(q["turnId"]) if t["state"] == "ended"]) == 1


async def test_invalid_initialization_options_are_reported_and_defaulted(
    workspace: Path, state_dir: Path
) -> None:
    options = {
        "permissions": "sometimes",
        "rename": {"timeoutMs": "soon", "fallback": "revert"},
        "titles": {"maxLength": 40},
        "bogus": 1,
        "notify": {"titleAsShowMessage": True},
    }
    async with open_editor("helix", workspace, state_dir, init_options=options) as ed:
        await ed.wait_message(lambda m: "bogus" in m)
        messages = [m.message for m in ed.client.messages if m.type == types.MessageType.Error]
        assert any("permissions" in m and "sometimes" in m for m in messages), messages
        assert any("rename.timeoutMs" in m for m in messages), messages
        assert any("bogus" in m for m in messages), messages
        assert not any("rename.fallback" in m or "maxLength" in m for m in messages)
        # titles.maxLength 40 applies, titleAsShowMessage applies.
        await ed.command("acp.session.new")
        _, end = await ed.prompt_and_wait("#title " + "long title words " * 10)
        info = await ed.wait_for("acp/sessionInfo", lambda i: i["titleSource"] == "agent")
        assert len(info["title"]) <= 40 and info["title"].endswith("…")
        await ed.wait_message(lambda m: m.startswith("ACP session: "))


async def test_helix_sees_results_and_errors_as_messages(workspace: Path, state_dir: Path) -> None:
    async with open_editor("helix", workspace, state_dir) as ed:
        sid = (await ed.command("acp.session.new"))["sessionId"]
        await ed.wait_message(lambda m: sid in m and "active" in m)
        await ed.prompt_and_wait("#title Helix visible title")
        await ed.command("acp.session.list")
        await ed.wait_message(
            lambda m: m.startswith("ACP sessions") and "Helix visible title" in m and sid in m
        )
        with pytest.raises(JsonRpcException):
            await ed.command("acp.session.load", "missing-id")
        await ed.wait_message(lambda m: m.startswith("acp.session.load: unknown session"))
    async with open_editor("vscode", workspace, state_dir) as ed:
        await ed.command("acp.session.list")
        await asyncio.sleep(0.2)
        assert not [m for m in ed.client.messages if m.message.startswith("ACP sessions")]


async def test_lua_empty_table_argument(workspace: Path, state_dir: Path) -> None:
    async with open_editor("neovim", workspace, state_dir) as ed:
        assert (await ed.command("acp.status", []))["state"] == "idle"


async def test_status_diagnostic_follows_the_user(workspace: Path, state_dir: Path) -> None:
    options = {"notify": {"statusDiagnostic": True}}
    async with open_editor("helix", workspace, state_dir, init_options=options) as ed:
        readme = ed.open(workspace / "README.md")
        await ed.command("acp.session.new")
        await ed.prompt_and_wait("#title Shown as a diagnostic")

        async def diagnostic_text(uri: str) -> str:
            # The turn may still be ending when the title arrives: wait for the idle status.
            async with asyncio.timeout(10):
                while True:
                    found = [d.message for d in ed.client.diagnostics.get(uri, []) if d.source == "acp"]
                    if found and "Shown as a diagnostic" in found[0] and "idle" in found[0]:
                        return found[0]
                    await asyncio.sleep(0.02)

        await diagnostic_text(readme)
        app = ed.open(workspace / "src" / "app.py")
        await diagnostic_text(app)
        assert not ed.client.diagnostics.get(readme), "it moved to the document in focus"
    async with open_editor("helix", workspace, state_dir) as ed:
        uri = ed.open(workspace / "README.md")
        await asyncio.sleep(0.3)
        assert not ed.client.diagnostics.get(uri), "off by default"
