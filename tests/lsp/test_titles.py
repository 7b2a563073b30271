"""Titles over the real LSP pipe: live updates, the cache, reconcile, rename, hostile input."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import sys
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types

from sidecar.features.titles.api import ListedSession, TitleStore
from tests.lsp.editor import Editor, open_editor
from tests.lsp.test_transcripts import transcript_path, wait_file

CONTROL = [chr(c) for c in range(32)] + ["\x7f", "\u202e", "\u2066", "\u200f", "\x1b"]
# The demo agent offers session/set_title, which renames without a prompt: these turn it off,
# for the tests of the rename prompt (what agents without session/set_title get).
NO_SET_TITLE = {"ACP_DEMO_CAPS": "no-set-title"}


def clean(text: str | None) -> bool:
    return text is None or not any(c in text for c in CONTROL)


async def info_for(ed: Editor, pred: Any, start: int = 0, timeout: float = 30) -> dict[str, Any]:
    info: dict[str, Any] = await ed.wait_for("acp/sessionInfo", pred, timeout=timeout, start=start)
    return info


async def test_auto_title_reaches_status_and_info(workspace: Path, state_dir: Path) -> None:
    async with open_editor(
        "helix", workspace, state_dir, init_options={"notify": {"titleAsShowMessage": True}}
    ) as ed:
        sid = (await ed.command("acp.session.new"))["sessionId"]
        await ed.prompt_and_wait("Refactor the parser module today")
        info = await info_for(ed, lambda i: i["titleSource"] == "agent")
        assert info["sessionId"] == sid and info["title"] == "Refactor the parser module today"
        status = await ed.wait_for("acp/status", lambda s: s["title"] == info["title"])
        assert info["title"] in status["text"]
        await ed.wait_message(lambda m: m == f"ACP session: {info['title']}")


async def test_meta_merge_and_clear(workspace: Path, state_dir: Path) -> None:
    async with open_editor("vscode", workspace, state_dir) as ed:
        await ed.command("acp.session.new")
        steps = [
            ({"_meta": {"a": 1, "nested": {"x": 1, "y": 2}}}, {"a": 1, "nested": {"x": 1, "y": 2}}),
            (
                {"_meta": {"nested": {"y": None, "z": 3}, "b": "two"}},
                {"a": 1, "nested": {"x": 1, "z": 3}, "b": "two"},
            ),
            ({"_meta": {"a": None}}, {"nested": {"x": 1, "z": 3}, "b": "two"}),
            ({"title": "Kept while meta changes"}, {"nested": {"x": 1, "z": 3}, "b": "two"}),
            ({"_meta": None}, None),
        ]
        for patch, expected in steps:
            mark = ed.mark()
            await ed.prompt_and_wait("#info " + json.dumps(patch))
            info = await info_for(ed, lambda i, e=expected: i["meta"] == e, start=mark)
        assert info["title"] == "Kept while meta changes"
        mark = ed.mark()
        await ed.prompt_and_wait('#info {"title": null}')
        info = await info_for(ed, lambda i: True, start=mark)
        assert info["title"] is None and info["titleSource"] is None


async def test_oversized_meta_is_refused_title_still_applies(workspace: Path, state_dir: Path) -> None:
    async with open_editor("vscode", workspace, state_dir) as ed:
        await ed.command("acp.session.new")
        huge = {"title": "Big meta", "_meta": {"blob": "x" * 200_000}}
        mark = ed.mark()
        await ed.prompt_and_wait("#info " + json.dumps(huge))
        info = await info_for(ed, lambda i: i["title"] == "Big meta", start=mark)
        assert info["meta"] is None
        deep: Any = {}
        cursor = deep
        for _ in range(40):
            cursor["d"] = {}
            cursor = cursor["d"]
        await ed.prompt_and_wait("#info " + json.dumps({"_meta": deep}))
        assert (await ed.command("acp.status"))["title"] == "Big meta"
        assert all(i["meta"] is None for i in ed.of("acp/sessionInfo"))


HOSTILE = [
    ("ansi", "\x1b[31mRed\x1b[0m title\x1b]0;pwned\x07 here", "Red title here"),
    ("percent", "100% done %s %%", "100% done %s %%"),
    ("nul", "a\x00b\x01c", "abc"),
    ("newlines", "line one\nline two\r\nthree\tfour", "line one line two three four"),
    ("rtl", "safe\u202egnp.exe\u2066x\u2069", "safegnp.exex"),
    ("long", "word " * 2000, None),
    ("surrogate", "\ud800lone\udfff surrogates", None),
]


@pytest.mark.parametrize(("name", "raw", "expected"), HOSTILE, ids=[h[0] for h in HOSTILE])
async def test_hostile_titles(
    name: str, raw: str, expected: str | None, workspace: Path, state_dir: Path
) -> None:
    async with open_editor("vscode", workspace, state_dir) as ed:
        await ed.command("acp.session.new")
        mark = ed.mark()
        await ed.prompt_and_wait("#info " + json.dumps({"title": raw}))
        info = await info_for(ed, lambda i: i["titleSource"] == "agent", start=mark)
        title = info["title"]
        assert clean(title) and len(title) <= 500
        if expected is not None:
            assert title == expected
        if name == "long":
            assert len(title) == 500 and title.endswith("…")
        if name == "surrogate":
            assert "lone" in title and not any(0xD800 <= ord(c) <= 0xDFFF for c in title)
        status = await ed.command("acp.status")
        assert clean(status["text"]) and len(status["text"]) <= 200


async def test_a_hostile_title_reads_the_same_in_the_status_line_and_the_document(
    workspace: Path, state_dir: Path
) -> None:
    # ANSI colour, NUL, lone surrogates, an RTL override and newlines, and a control string that a
    # line break ends: one text-safety policy (sidecar/text_safety.py) makes one title of it.
    raw = "\x1b[31mRed\x1b[0m\x00 ti\ud800tle\u202e\n\x1b]0;pwned\nnext\u2066 line\r\nend\udfff"
    async with open_editor("helix", workspace, state_dir) as ed:
        await ed.command("acp.session.new")
        mark = ed.mark()
        await ed.prompt_and_wait("#info " + json.dumps({"title": raw}))
        info = await info_for(ed, lambda i: i["titleSource"] == "agent", start=mark)
        assert info["title"] == "Red title next line end"
        status = await ed.wait_for("acp/status", lambda s: s["title"] == info["title"], start=mark)
        assert f" · {info['title']}" in status["text"], status["text"]
        document = await transcript_path(ed)
        header = await wait_file(document, lambda text: text.startswith(f"# {info['title']}\n"))
        assert header.splitlines()[0] == f"# {status['title']}"


async def test_rename_confirmed_then_survives_restart_and_refresh(workspace: Path, state_dir: Path) -> None:
    # The slow rename (the demo agent confirms after 2 s) keeps the rename pending while
    # the list below is asked: the default agent often confirmed before the list answered.
    env = {"ACP_DEMO_RENAME": "slow", **NO_SET_TITLE}
    async with open_editor("vscode", workspace, state_dir, env=env) as ed:
        sid = (await ed.command("acp.session.new"))["sessionId"]
        await ed.prompt_and_wait("#chunks=1 first prompt words")
        mark = ed.mark()
        result = await ed.command("acp.session.rename", {"title": "  Fix   auth timeout "})
        assert result == {"sessionId": sid, "requestedTitle": "Fix auth timeout"}
        pending = await info_for(ed, lambda i: i["renameState"] == "pending", start=mark)
        listed = await ed.command("acp.session.list")
        assert listed["sessions"][0]["pendingTitle"] == "Fix auth timeout"
        assert pending["title"] != "Fix auth timeout"
        done = await info_for(ed, lambda i: i["renameState"] not in ("pending", None), start=mark)
        assert done["renameState"] == "confirmed" and done["title"] == "Fix auth timeout"
        assert done["titleSource"] == "user"
        assert (await ed.command("acp.status"))["title"] == "Fix auth timeout"
    async with open_editor("vscode", workspace, state_dir) as ed:
        refreshed = await ed.command("acp.session.list", {"refresh": True})
        entry = next(s for s in refreshed["sessions"] if s["sessionId"] == sid)
        assert entry["title"] == "Fix auth timeout" and entry["titleSource"] == "user"
        assert entry["pendingTitle"] is None


async def test_rename_changed_by_agent(workspace: Path, state_dir: Path) -> None:
    async with open_editor(
        "vscode", workspace, state_dir, env={"ACP_DEMO_RENAME": "other", **NO_SET_TITLE}
    ) as ed:
        await ed.command("acp.session.new")
        mark = ed.mark()
        await ed.command("acp.session.rename", "Wanted")
        done = await info_for(ed, lambda i: i["renameState"] not in ("pending", None), start=mark)
        assert done["renameState"] == "changed"
        assert done["title"] == "Wanted (demo)" and done["titleSource"] == "agent"


@pytest.mark.parametrize(
    ("fallback", "expected_title", "source"),
    [("keep_local", "Wanted", "user"), ("revert", "Original", "agent")],
)
async def test_rename_unconfirmed_fallbacks(
    fallback: str, expected_title: str, source: str, workspace: Path, state_dir: Path
) -> None:
    options = {"rename": {"fallback": fallback}}
    env = {"ACP_DEMO_RENAME": "ignore", **NO_SET_TITLE}
    async with open_editor("vscode", workspace, state_dir, env=env, init_options=options) as ed:
        await ed.command("acp.session.new")
        await ed.prompt_and_wait("#title Original")
        mark = ed.mark()
        await ed.command("acp.session.rename", "Wanted")
        done = await info_for(ed, lambda i: i["renameState"] not in ("pending", None), start=mark)
        assert done["renameState"] == "unconfirmed"
        assert (done["title"], done["titleSource"]) == (expected_title, source)
        async with asyncio.timeout(5):
            while not any("did not confirm" in m.message for m in ed.client.log_messages):
                await asyncio.sleep(0.02)


async def test_rename_timeout(workspace: Path, state_dir: Path) -> None:
    options = {"rename": {"timeoutMs": 300, "fallback": "keep_local"}}
    env = {"ACP_DEMO_RENAME": "slow", **NO_SET_TITLE}
    async with open_editor("vscode", workspace, state_dir, env=env, init_options=options) as ed:
        await ed.command("acp.session.new")
        mark = ed.mark()
        await ed.command("acp.session.rename", "Slow rename")
        done = await info_for(ed, lambda i: i["renameState"] not in ("pending", None), start=mark)
        assert done["renameState"] == "unconfirmed" and done["title"] == "Slow rename"


async def test_rename_prompt_queues_behind_a_running_turn(workspace: Path, state_dir: Path) -> None:
    async with open_editor("helix", workspace, state_dir, env=NO_SET_TITLE) as ed:
        await ed.command("acp.session.new")
        running = await ed.command("acp.prompt", "#chunks=10 #slow=50 busy")
        mark = ed.mark()
        await ed.command("acp.session.rename", "After the turn")
        await info_for(ed, lambda i: i["renameState"] == "pending", start=mark)
        done = await info_for(ed, lambda i: i["renameState"] not in ("pending", None), start=mark)
        assert done["renameState"] == "confirmed" and done["title"] == "After the turn"
        end = next(t for t in ed.turn_events(running["turnId"]) if t["state"] == "ended")
        assert end["stopReason"] == "end_turn"
        assert ed.notes.index(next(n for n in ed.notes if n[2] is end)) < ed.notes.index(
            next(n for n in ed.notes if n[2] is done)
        )


async def test_reconcile_many_sessions_over_pages(workspace: Path, state_dir: Path) -> None:
    demo_state = state_dir / "demo-agent"
    seed = [sys.executable, "-m", "sidecar.demo_agent", "seed", "--state-dir", str(demo_state)]
    proc = await asyncio.create_subprocess_exec(
        *seed, "--cwd", str(workspace), "--count", "130", "--titled", "100", stdout=asyncio.subprocess.PIPE
    )
    out, _ = await proc.communicate()
    seeded = json.loads(out)["sessionIds"]
    assert len(seeded) == 130
    env = {"ACP_DEMO_PAGE_SIZE": "25"}
    async with open_editor("vscode", workspace, state_dir, env=env) as ed:
        own = (await ed.command("acp.session.new"))["sessionId"]
        await ed.command("acp.session.load", seeded[0])
        await ed.command("acp.session.rename", "User chose this")
        await info_for(ed, lambda i: i["renameState"] == "confirmed")
        listed = await ed.command("acp.session.list", {"refresh": True})
        by_id = {s["sessionId"]: s for s in listed["sessions"]}
        assert set(seeded) | {own} == set(by_id)
        assert by_id[seeded[0]]["title"] == "User chose this" and by_id[seeded[0]]["titleSource"] == "user"
        titled = [s for s in seeded[1:] if by_id[s]["title"]]
        assert titled and all(by_id[s]["titleSource"] == "list" for s in titled)
    # Sessions the agent no longer lists are kept, marked missing.
    for sid in seeded[:10]:
        (demo_state / "sessions" / f"{sid}.json").unlink()
    async with open_editor("vscode", workspace, state_dir, env=env) as ed:
        listed = await ed.command("acp.session.list", {"refresh": True})
        assert {s["sessionId"] for s in listed["sessions"]} == set(seeded) | {own}
    store = TitleStore(state_dir / "titles.sqlite3")
    records = {r.session_id: r for r in store.list("acp-sidecar-demo")}
    store.close()
    assert {s for s, r in records.items() if r.missing} == set(seeded[:10])
    assert records[seeded[0]].title == "User chose this"


@pytest.mark.slow
async def test_several_sidecars_share_one_store(workspace: Path, state_dir: Path) -> None:
    per_sidecar = 8

    async def one(index: int) -> list[tuple[str, str]]:
        made = []
        async with open_editor("helix", workspace, state_dir) as ed:
            for n in range(per_sidecar):
                sid = (await ed.command("acp.session.new"))["sessionId"]
                title = f"sidecar {index} session {n}"
                await ed.prompt_and_wait(f"#title {title}")
                made.append((sid, title))
        return made

    results = await asyncio.gather(*(one(i) for i in range(3)))
    expected = dict(pair for made in results for pair in made)
    assert len(expected) == 3 * per_sidecar
    async with open_editor("helix", workspace, state_dir) as ed:
        listed = await ed.command("acp.session.list")
        got = {s["sessionId"]: s["title"] for s in listed["sessions"]}
    assert got == expected


async def test_corrupt_title_database_is_moved_aside(workspace: Path, state_dir: Path) -> None:
    db = state_dir / "titles.sqlite3"
    db.write_bytes(b"this is not a database at all" * 100)
    async with open_editor("vscode", workspace, state_dir) as ed:
        message = await ed.wait_message(lambda m: "corrupt" in m.lower() or "moved" in m.lower())
        assert "titles.sqlite3" in message
        await ed.command("acp.session.new")
        await ed.prompt_and_wait("#title Fresh start")
        # A title is shown (acp/sessionInfo) once saved: by then the new store lists it.
        await ed.wait_for("acp/sessionInfo", lambda p: p.get("title") == "Fresh start")
        listed = await ed.command("acp.session.list")
        assert [s["title"] for s in listed["sessions"]] == ["Fresh start"]
    assert list(state_dir.glob("titles.sqlite3.corrupt-*"))
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


async def test_the_session_list_is_the_newest_few_and_symbols_find_the_rest(
    workspace: Path, state_dir: Path
) -> None:
    """acp.session.list answers the newest `limit` sessions (of the workspace's folders), in
    order, and says older ones exist; workspace/symbol still finds one of those."""
    elsewhere = workspace.parent / "another-project"
    store = TitleStore(state_dir / "titles.sqlite3")
    try:
        for cwd, count in ((workspace, 40), (elsewhere, 3)):
            listed = [
                ListedSession.from_acp(
                    {
                        "sessionId": f"{cwd.name}-{i:03d}",
                        "cwd": str(cwd),
                        "title": f"Seeded {cwd.name} {i}",
                        "updatedAt": f"2026-11-01T{i // 60:02d}:{i % 60:02d}:00Z",
                    }
                )
                for i in range(count)
            ]
            store.reconcile("acp-sidecar-demo", str(cwd), [e for e in listed if e is not None], True)
    finally:
        store.close()
    newest_first = [f"{workspace.name}-{i:03d}" for i in reversed(range(40))]
    async with open_editor("helix", workspace, state_dir) as ed:
        own = (await ed.command("acp.session.new"))[
            "sessionId"
        ]  # the demo agent runs: its sessions are known
        few = await ed.command("acp.session.list", {"limit": 10})
        everything = await ed.command("acp.session.list")
        exact = await ed.command("acp.session.list", {"limit": 41})
        with pytest.raises(Exception, match="limit"):
            await ed.command("acp.session.list", {"limit": 0})
        async with asyncio.timeout(15):
            old = await ed.client.workspace_symbol_async(
                types.WorkspaceSymbolParams(query=f"{workspace.name}-002")
            )
    assert [s["sessionId"] for s in few["sessions"]] == [own, *newest_first[:9]] and few["more"] is True
    assert [s["sessionId"] for s in everything["sessions"]] == [own, *newest_first]
    assert everything["more"] is False  # the other project's sessions are not listed at all
    assert len(exact["sessions"]) == 41 and exact["more"] is False
    assert old is not None and [s.name for s in old] == [f"Seeded {workspace.name} 2"]
