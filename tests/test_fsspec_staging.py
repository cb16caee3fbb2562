"""Where a file written through ``o41://`` waits for its commit: memory, or disk past the
budget, hashed as it is written; the commit uploads it without hashing it again."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import TYPE_CHECKING

import fsspec
import pytest

from o41 import fsbytes
from o41.filesystem import O41FileSystem

if TYPE_CHECKING:
    from client_fixtures import Emulator

pytest_plugins = ["client_fixtures"]
MIB = 1024 * 1024


def make_fs(emu: Emulator, tmp_path: Path) -> O41FileSystem:
    return fsspec.filesystem("o41", api_url=emu.api, api_key=emu.key, place="aws/us-east-1",
                             skip_instance_cache=True, staging_dir=str(tmp_path))


def blob(size: int, seed: int = 1) -> bytes:
    return hashlib.shake_256(seed.to_bytes(4, "big")).digest(size)


def staged(fs: O41FileSystem, location: str, name: str) -> fsbytes.StagedPath:
    artifact = location.removeprefix("o41://")
    path = fs._staging.staged((artifact, "step-00000001"), name)
    assert isinstance(path, fsbytes.StagedPath) and path.staged is not None
    return path


def test_small_file_waits_in_memory_with_its_sha256_and_commits(
        o41_emulator: Emulator, o41_location: str, tmp_path: Path) -> None:
    fs = make_fs(o41_emulator, tmp_path)
    data = blob(6 * MIB + 3)
    step = f"{o41_location}/step-00000001"
    with fs.transaction:
        with fs.open(f"{step}/model.bin", "wb") as f:
            for i in range(0, len(data), 1000_003):
                f.write(data[i:i + 1000_003])
            os.fsync(f.fileno())  # torch DCP syncs what it writes: it must work, and cheaply
        path = staged(fs, o41_location, "model.bin")
        assert path.staged.data is not None and bytes(path.staged.data) == data
        assert path.staged.sha256 == hashlib.sha256(data).hexdigest()
        assert path.stat().st_size == 0  # nothing of it went to disk
    assert fs.cat_file(f"{o41_location}/latest/model.bin") == data


def test_file_past_the_memory_budget_moves_to_disk_keeping_every_byte(
        o41_emulator: Emulator, o41_location: str, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fsbytes, "MEMORY_BUDGET", fsbytes.BUDGET.used + 3 * MIB)
    fs = make_fs(o41_emulator, tmp_path)
    data = blob(9 * MIB + 11, seed=2)
    step = f"{o41_location}/step-00000001"
    with fs.transaction:
        with fs.open(f"{step}/big.bin", "wb") as f:
            for i in range(0, len(data), MIB):
                f.write(memoryview(data)[i:i + MIB])
            assert not f.in_memory and f.tell() == len(data)
        path = staged(fs, o41_location, "big.bin")
        assert path.staged.data is None and path.read_bytes() == data
        assert path.staged.sha256 == hashlib.sha256(data).hexdigest()
    assert fs.cat_file(f"{o41_location}/latest/big.bin") == data
    assert fsbytes.BUDGET.used <= fsbytes.MEMORY_BUDGET


def test_writer_that_seeks_back_and_overwrites_commits_the_final_bytes(
        o41_emulator: Emulator, o41_location: str, tmp_path: Path) -> None:
    fs = make_fs(o41_emulator, tmp_path)
    data = bytearray(blob(5 * MIB, seed=3))
    with fs.transaction:
        with fs.open(f"{o41_location}/step-00000001/zip.bin", "wb") as f:
            f.write(bytes(data))
            f.seek(100)  # as zipfile patches a header it wrote earlier
            f.write(b"PATCHED")
            f.seek(0, os.SEEK_END)
            f.write(b"tail")
        data[100:107] = b"PATCHED"
        data += b"tail"
        assert staged(fs, o41_location, "zip.bin").staged.sha256 == \
            hashlib.sha256(data).hexdigest()
    assert fs.cat_file(f"{o41_location}/latest/zip.bin") == bytes(data)


def test_discarded_file_gives_its_memory_back(o41_emulator: Emulator, o41_location: str,
                                              tmp_path: Path) -> None:
    fs = make_fs(o41_emulator, tmp_path)
    with pytest.raises(RuntimeError), fs.open(f"{o41_location}/step-00000001/x.bin",
                                              "wb") as f:
        f.write(blob(2 * MIB))
        assert f.in_memory and f._reserved >= 2 * MIB
        raise RuntimeError("the writer failed")
    assert f._reserved == 0 and f.closed
    assert fs.uncommitted() == []
