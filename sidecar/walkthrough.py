"""A scripted tour: drives acp-sidecar over LSP exactly as an editor would, and narrates.

`make demo` runs it against the embedded demo agent (offline, deterministic):
create a session, stream a prompt, watch the title arrive, rename, list, cancel,
restart the sidecar, load the session back.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

BOLD, DIM, GREEN, CYAN, RESET = "\x1b[1m", "\x1b[2m", "\x1b[32m", "\x1b[36m", "\x1b[0m"


def _style(code: str, text: str) -> str:
    return f"{code}{text}{RESET}" if sys.stdout.isatty() else text


class MiniEditor:
    """Just enough of an LSP client: requests, notifications, and answers to the server."""

    def __init__(self, command: list[str], env: dict[str, str], cwd: str) -> None:
        self.argv, self.env, self.cwd = command, env, cwd
        self.notes: list[tuple[str, Any]] = []
        self.cond = asyncio.Condition()
        self.pending: dict[int, asyncio.Future[Any]] = {}
        self.next_id = 1
        self.on_note: Callable[[str, Any], None] = lambda _m, _p: None

    async def start(self) -> None:
        self.proc = await asyncio.create_subprocess_exec(
            *self.argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
            env=self.env,
            cwd=self.cwd,
        )
        self.reader = asyncio.create_task(self._read())

    async def _read(self) -> None:
        assert self.proc.stdout is not None
        out = self.proc.stdout
        while True:
            length = 0
            while True:
                line = await out.readline()
                if not line:
                    return
                if not line.strip():
                    break
                key, _, value = line.decode().partition(":")
                if key.lower() == "content-length":
                    length = int(value)
            msg = json.loads(await out.readexactly(length))
            if "method" in msg and "id" in msg:
                self._send(
                    {
                        "jsonrpc": "2.0",
                        "id": msg["id"],
                        "result": self._answer(msg["method"], msg.get("params")),
                    }
                )
            elif "method" in msg:
                self.on_note(msg["method"], msg.get("params"))
                async with self.cond:
                    self.notes.append((msg["method"], msg.get("params")))
                    self.cond.notify_all()
            else:
                fut = self.pending.pop(msg.get("id"), None)
                if fut is not None and not fut.done():
                    fut.set_result(msg)

    def _answer(self, method: str, params: Any) -> Any:
        if method == "window/showMessageRequest":
            actions = (params or {}).get("actions") or []
            return actions[0] if actions else None  # the demo user allows
        if method == "workspace/applyEdit":
            return {"applied": True}
        return None

    def _send(self, obj: dict[str, Any]) -> None:
        body = json.dumps(obj).encode()
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    async def request(self, method: str, params: Any, timeout: float = 30) -> Any:
        rid = self.next_id
        self.next_id += 1
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self.pending[rid] = fut
        self._send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        msg = await asyncio.wait_for(fut, timeout)
        if "error" in msg:
            raise RuntimeError(msg["error"]["message"])
        return msg.get("result")

    async def command(self, name: str, arg: Any = None) -> Any:
        return await self.request("workspace/executeCommand", {"command": name, "arguments": [arg or {}]})

    async def wait_for(self, method: str, pred: Callable[[Any], bool], timeout: float = 30) -> Any:
        index = 0
        async with asyncio.timeout(timeout), self.cond:
            while True:
                while index < len(self.notes):
                    m, p = self.notes[index]
                    index += 1
                    if m == method and pred(p):
                        return p
                await self.cond.wait()

    async def initialize(self, root: Path) -> None:
        caps = {
            "window": {"workDoneProgress": True, "showMessage": {}},
            "workspace": {"applyEdit": True, "workspaceEdit": {"documentChanges": True}},
        }
        params = {"processId": os.getpid(), "rootUri": root.as_uri(), "capabilities": caps}
        await self.request("initialize", params)
        self._send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
        await self.wait_for("acp/status", lambda s: s["state"] in ("idle", "error"))

    async def stop(self) -> None:
        try:
            await self.request("shutdown", None, timeout=10)
            self._send({"jsonrpc": "2.0", "method": "exit"})
            await asyncio.wait_for(self.proc.wait(), 10)
        finally:
            if self.proc.returncode is None:
                self.proc.kill()
            self.reader.cancel()


def say(step: str) -> None:
    print("\n" + _style(BOLD, f"▶ {step}"), flush=True)


def show(label: str, value: Any) -> None:
    print(f"  {_style(DIM, label + ':')} {value}", flush=True)


def stream_printer() -> Callable[[str, Any], None]:
    def on_note(method: str, params: Any) -> None:
        if method == "acp/sessionUpdate":
            update = params["update"]
            kind = update.get("sessionUpdate")
            if kind == "agent_message_chunk" and not params.get("replay"):
                print(_style(GREEN, update["content"].get("text", "")), end="", flush=True)
            elif kind == "tool_call":
                print(_style(CYAN, f"\n  [tool] {update.get('title')} ({update.get('status')})"), flush=True)
            elif kind == "plan":
                steps = ", ".join(f"{e['content']} [{e['status']}]" for e in update.get("entries", []))
                print(_style(DIM, f"\n  [plan] {steps}"), flush=True)
        elif method == "acp/sessionInfo":
            print(
                _style(
                    CYAN,
                    f"\n  [title] {params['title']!r} ({params['titleSource']}, "
                    f"rename: {params['renameState']})",
                ),
                flush=True,
            )

    return on_note


async def tour(sidecar: list[str], keep: bool) -> int:
    base = Path(tempfile.mkdtemp(prefix="acp-demo-"))
    workspace, state = base / "workspace", base / "state"
    workspace.mkdir()
    state.mkdir()
    (workspace / "README.md").write_text("# Practice repo\n\nA tiny project to try acp-sidecar on.\n")
    env = dict(os.environ, ACP_SIDECAR_STATE_DIR=str(state))
    env.pop("ACP_SIDECAR_AGENT", None)
    command = [*sidecar, "--state-dir", str(state)]
    try:
        say("Start the sidecar like an editor does (LSP over stdio); it starts the demo agent")
        editor = MiniEditor(command, env, str(workspace))
        await editor.start()
        await editor.initialize(workspace)
        status = await editor.command("acp.status")
        show("status", status["text"])

        say("acp.session.new")
        sid = (await editor.command("acp.session.new"))["sessionId"]
        show("session", sid)

        say('acp.prompt "Where is the README? Do not change files."  (streams, then the title arrives)')
        editor.on_note = stream_printer()
        turn = await editor.command("acp.prompt", {"text": "Where is the README? Do not change files."})
        end = await editor.wait_for(
            "acp/turn", lambda t: t["turnId"] == turn["turnId"] and t["state"] == "ended"
        )
        print()
        show("stop reason", end["stopReason"])
        show("status line", (await editor.command("acp.status"))["text"])

        say('acp.session.rename "Find the README"  (session/set_title: the agent stores it at once)')
        await editor.command("acp.session.rename", {"title": "Find the README"})
        info = await editor.wait_for("acp/sessionInfo", lambda i: i["renameState"] not in (None, "pending"))
        show("rename", f"{info['renameState']}: {info['title']!r}")

        say("acp.cancel during a slow answer")
        slow = await editor.command("acp.prompt", {"text": "#slow=150 Tell me a long story"})
        await editor.wait_for("acp/turn", lambda t: t["turnId"] == slow["turnId"] and t["state"] == "running")
        await asyncio.sleep(0.6)
        show("cancel", await editor.command("acp.cancel"))
        end = await editor.wait_for(
            "acp/turn", lambda t: t["turnId"] == slow["turnId"] and t["state"] == "ended"
        )
        print()
        show("stop reason", end["stopReason"])

        say("acp.session.list")
        for entry in (await editor.command("acp.session.list"))["sessions"]:
            show("session", f"{entry['title']!r} ({entry['titleSource']}) active={entry['active']}")
        await editor.stop()

        say("Restart the sidecar (a new process, same state dir) and load the session back")
        editor = MiniEditor(command, env, str(workspace))
        await editor.start()
        await editor.initialize(workspace)
        for entry in (await editor.command("acp.session.list"))["sessions"]:
            show("cached", f"{entry['title']!r} ({entry['titleSource']})")
        await editor.command("acp.session.load", {"sessionId": sid})
        show("status line", (await editor.command("acp.status"))["text"])
        await editor.stop()
        say("Done: every step above went over a real LSP pipe to a real agent process.")
        return 0
    finally:
        if not keep:
            shutil.rmtree(base, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--sidecar", default=None, help="sidecar command (default: this Python's acp-sidecar)")
    ap.add_argument("--keep", action="store_true", help="keep the temporary workspace and state")
    args = ap.parse_args(argv)
    sidecar = [args.sidecar] if args.sidecar else [sys.executable, "-m", "sidecar"]
    return asyncio.run(tour(sidecar, args.keep))


if __name__ == "__main__":
    raise SystemExit(main())
