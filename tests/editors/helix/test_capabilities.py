"""The Helix profile of tests/lsp is exactly what the real Helix sends in `initialize`."""

from __future__ import annotations

import json

from lsprotocol import types
from pygls.protocol import default_converter

from tests.editors.helix.harness import SIDECAR_SERVER, HelixEditor
from tests.lsp.editor import CLIENT_INFO, HELIX_CAPABILITIES, helix_capabilities


def test_lsp_test_profile_matches_what_real_helix_sends(helix: HelixEditor) -> None:
    helix.start("main.py")
    helix.wait_attached()
    params = helix.log().initialize_params(SIDECAR_SERVER)
    assert params is not None
    sent = params["capabilities"]
    # The recording the profile is built from is byte for byte what Helix sends ...
    assert sent == json.loads(HELIX_CAPABILITIES.read_text())
    # ... and the profile is what the sidecar makes of it.
    assert default_converter().structure(sent, types.ClientCapabilities) == helix_capabilities()
    info = CLIENT_INFO["helix"]
    assert params["clientInfo"] == {"name": info.name, "version": info.version}
    # The facts the sidecar's Helix paths depend on (FIELD-NOTES.md).
    assert sent["window"]["showMessage"] == {"messageActionItem": {"additionalPropertiesSupport": True}}
    assert sent["window"]["showDocument"] == {"support": True}
    assert sent["general"]["positionEncodings"][0] == "utf-8"
    # With a project root (the harness's git repository) Helix names the workspace folder.
    assert [f["uri"] for f in params["workspaceFolders"]] == [helix.workspace.as_uri()]
