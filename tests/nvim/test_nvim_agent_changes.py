"""The agent's changes after they landed, in a real Neovim with the plugin (docs/protocol.md, "Agent
changes"): vim.diagnostic shows the agent's line, vim.lsp.buf.code_action reverts it."""

from __future__ import annotations

import pytest
from nvim_harness import NvimEnv

from tests.nvim.test_nvim_e2e import ok

pytestmark = [pytest.mark.nvim, pytest.mark.editors]


def test_the_agents_edit_is_a_diagnostic_and_a_code_action_reverts_it(nvim_env: NvimEnv) -> None:
    res = ok(nvim_env.run("agent_changes"))
    assert res["edited"][-1] == "Edited by the acp-sidecar demo agent.", res["edited"]
    diagnostic = res["diagnostic"]
    assert diagnostic["message"].startswith("added by the agent · "), diagnostic
    assert diagnostic["severity"] == 4  # vim.diagnostic.severity.HINT
    assert res["edited"][diagnostic["lnum"]] in ("", "Edited by the acp-sidecar demo agent.")
    assert res["after"] == res["before"]
