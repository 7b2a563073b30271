"""make demo without a terminal runs the walkthrough: it must run to the end, every step real."""

from __future__ import annotations

import os
import subprocess
import sys


def test_walkthrough_runs_every_step() -> None:
    env = dict(os.environ)
    env.pop("ACP_SIDECAR_AGENT", None)
    out = subprocess.run(
        [sys.executable, "-m", "sidecar.walkthrough"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        stdin=subprocess.DEVNULL,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    text = out.stdout
    for step in (
        "acp.session.new",
        "acp.prompt",
        "acp.session.rename",
        "acp.cancel",
        "acp.session.list",
        "Restart",
    ):
        assert step in text
    assert "stop reason: end_turn" in text and "stop reason: cancelled" in text
    assert "rename: confirmed: 'Find the README'" in text
    assert "cached: 'Find the README' (user)" in text
    assert "\x1b[" not in text, "no colour codes when stdout is not a terminal"
