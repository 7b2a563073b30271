"""The VS Code extension's diff rule (src/diffApply.ts, compiled) agrees with the sidecar's
(sidecar/core/diff_apply.py) on the shared fixed and random cases (tests/diff_cases.py)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from sidecar.core.diff_apply import apply_diffs
from tests.diff_cases import FIXED, FIXED_FITS, diff_cases
from tests.editors.vscode.build import Build

pytestmark = [pytest.mark.editors, pytest.mark.timeout(900)]

RUN = """
const { applyDiffs } = require(process.argv[1]);
const cases = JSON.parse(require('node:fs').readFileSync(process.argv[2], 'utf8'));
process.stdout.write(JSON.stringify(cases.map(([current, diffs]) => applyDiffs(current, diffs))));
"""


def test_extension_applies_diffs_by_the_sidecars_rules(vsix: Build, tmp_path: Path) -> None:
    node = shutil.which("node")
    assert node, "node is not installed: apt-get install nodejs (Debian), or run `make setup`"
    module = vsix.root / "out" / "lib" / "diffApply.js"  # built by the .vsix build (esbuild.mjs)
    cases = diff_cases()
    data = tmp_path / "cases.json"
    data.write_text(json.dumps(cases))
    res = subprocess.run(
        [node, "-e", RUN, str(module), str(data)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
        stdin=subprocess.DEVNULL,
    )
    got = json.loads(res.stdout)
    for (current, diffs), proposal in zip(cases, got, strict=True):
        want = apply_diffs(current, diffs)
        assert (proposal["fit"], proposal["text"]) == (want.fit.value, want.text), (current, diffs)
    assert [p["fit"] for p in got[: len(FIXED)]] == FIXED_FITS
    assert got[2]["text"] == "# Demo\n\nline one\nline 2\n"
