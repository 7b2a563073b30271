"""The index of the items a transcript document holds (sidecar/features/conversation/index.py)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from sidecar.features.conversation import index as index_module
from sidecar.features.conversation.index import ItemIndex

KEYS = [f"a:{n:024x}" for n in range(1000)]


def test_a_new_index_is_not_read_back_after_its_first_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """It holds what this process wrote, counted already; what another writer adds later (the
    same document's lock, another sidecar) is read, from where ours ended."""
    path = tmp_path / ".s.keys"
    index = ItemIndex(durable=False)
    reads: list[int] = []
    pread = os.pread

    def counting(fd: int, size: int, offset: int) -> Any:
        reads.append(size)
        return pread(fd, size, offset)

    monkeypatch.setattr(index_module.os, "pread", counting)
    index.add(path, KEYS + KEYS[:1])
    assert path.read_text() == "".join(k + "\n" for k in KEYS + KEYS[:1])
    counts = index.counts(path)
    assert reads == [] and counts[KEYS[0]] == 2 and sum(counts.values()) == 1001
    with path.open("a") as fh:
        fh.write(KEYS[5] + "\n")  # another writer
    assert index.counts(path)[KEYS[5]] == 2
    assert reads == [len(KEYS[5]) + 1], "only what it added"
    index.add(path, KEYS[:2])
    fresh = ItemIndex(durable=False).counts(path)  # what a new process reads from the file
    assert fresh == index.counts(path) and fresh[KEYS[0]] == 3 and fresh[KEYS[1]] == 2


def test_an_index_that_existed_before_is_read_whole(tmp_path: Path) -> None:
    path = tmp_path / ".s.keys"
    path.write_text(KEYS[0] + "\n")
    index = ItemIndex(durable=False)
    index.add(path, KEYS[:1])
    assert index.counts(path)[KEYS[0]] == 2
    assert path.read_text() == KEYS[0] + "\n" + KEYS[0] + "\n"
