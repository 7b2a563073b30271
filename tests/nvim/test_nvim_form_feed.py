"""A form-feed file reads back exactly as Neovim holds it (real headless Neovim, its own LSP
client and incremental didChange; the scripted agent reads the file through the sidecar)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from nvim_harness import NvimEnv
from test_nvim_e2e import ok

pytestmark = [pytest.mark.nvim, pytest.mark.editors]

SCRIPTED = Path(__file__).resolve().parents[1] / "agents" / "scripted_agent.py"
SOURCE = "int a;\n\f\nx\u2028y\x85z\vw\nint b;\nint c;\nlast\n"


def test_a_form_feed_file_reads_back_exactly_as_neovim_holds_it(nvim_env: NvimEnv) -> None:
    (nvim_env.ws / "ff.c").write_text(SOURCE)
    run = nvim_env.run("form_feed", {"ACP_TEST_AGENT": f"{sys.executable} {SCRIPTED}"})
    res = ok(run)
    assert res["sync"]["change"] == 2, "Neovim sends incremental changes"
    assert res["opened"] == ["int a;", "\f", "x\u2028y\x85z\vw", "int b;", "int c;", "last"]
    samples = res["samples"]
    assert [s["what"] for s in samples] == [
        "a line inserted, a word replaced",
        "appended, another form feed, the first line deleted",
    ]
    first, second = samples
    assert (
        first["buffer"]
        == "int a;\n\f\nx\u2028y\x85z\vw\ninserted below the form feed\nint b;\nINT c;\nlast\n"
    )
    assert second["buffer"].startswith("\f\f\n") and second["buffer"].endswith("appended \u2028 too\n")
    for sample in samples:
        assert sample["read"] == {"result": {"content": sample["buffer"]}}, sample["what"]
