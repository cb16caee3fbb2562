"""The ``o41://`` fsspec filesystem against a served emulator: reads, commits, fencing."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import fsspec
import pytest
import requests

import o41
from o41.fs.filesystem import O41FileSystem
from o41.writing.stage import UncommittedWarning
from tests.support.client_helpers import make_fs
from tests.support.deadlines import HANG_GUARD

if TYPE_CHECKING:
    from tests.support.client_fixtures import Emulator

pytest_plugins = ["tests.support.client_fixtures"]
REPO = Path(__file__).resolve().parents[2]


def client_env(emu: Emulator) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SKYPILOT_", "O41_"))}
    return {**env, "O41_ARTIFACTS_API_URL": emu.api, "O41_ARTIFACTS_API_KEY": emu.key}


def versions(fs: O41FileSystem, location: str) -> list[str]:
    try:
        return [name.rsplit("/", 1)[1] for name in fs.ls(location, detail=False)]
    except FileNotFoundError:
        return []


def test_entry_point_registers_o41_protocol() -> None:
    assert fsspec.get_filesystem_class("o41") is O41FileSystem


def test_fsspec_open_latest_reads_latest_committed_version(o41_env: Emulator,
                                                          o41_location: str) -> None:
    fs = make_fs(o41_env)
    fs.pipe_file(f"{o41_location}/step-00000001/commit_success.txt", b"old")
    fs.pipe_file(f"{o41_location}/step-00000002/commit_success.txt", b"new")
    # the environment alone configures fsspec.open, as it does the client
    with fsspec.open(f"{o41_location}/latest/commit_success.txt", "rb",
                     skip_instance_cache=True) as f:
        assert f.read() == b"new"
    assert fs.cat_file(f"{o41_location}/step-00000001/commit_success.txt") == b"old"


def test_transaction_files_become_exactly_one_version(served_emulator: Emulator,
                                                      o41_location: str) -> None:
    fs = make_fs(served_emulator)
    step = f"{o41_location}/step-00000100"
    with fs.transaction:
        with fs.open(f"{step}/model.bin", "wb") as f:
            f.write(b"m" * 3_000_000)
        fs.pipe_file(f"{step}/nested/optim.bin", b"o" * 1000)
        assert versions(fs, o41_location) == []  # nothing shows before the block ends
    assert versions(fs, o41_location) == ["step-00000100"]
    assert sorted(fs.find(step)) == [f"{step[6:]}/model.bin", f"{step[6:]}/nested/optim.bin"]
    assert fs.info(f"{step}/model.bin")["sha256"] == hashlib.sha256(b"m" * 3_000_000).hexdigest()


def test_transaction_left_by_exception_commits_nothing(served_emulator: Emulator,
                                                       o41_location: str) -> None:
    fs = make_fs(served_emulator)
    with pytest.raises(RuntimeError), fs.transaction:
        fs.pipe_file(f"{o41_location}/step-00000001/a.bin", b"a")
        raise RuntimeError("trainer crashed mid-checkpoint")
    assert versions(fs, o41_location) == [] and fs.uncommitted() == []


def test_fenced_transaction_raises_permission_error_and_leaves_nothing(
        served_emulator: Emulator, o41_location: str) -> None:
    zombie, newer = make_fs(served_emulator), make_fs(served_emulator)
    zombie.pipe_file(f"{o41_location}/step-00000001/commit_success.txt", b"1")
    newer.run(o41_location)  # a newer launch opens the artifact: the zombie is fenced
    with pytest.raises(PermissionError) as info, zombie.transaction:
        zombie.pipe_file(f"{o41_location}/step-00000002/model.bin", b"late")
    assert isinstance(info.value, o41.Fenced) and info.value.code == "fenced"
    assert info.value.status == 409
    assert versions(newer, o41_location) == ["step-00000001"]
    assert zombie.uncommitted() == []


def test_put_directory_is_one_version(served_emulator: Emulator, o41_location: str,
                                      tmp_path: Path) -> None:
    (tmp_path / "ckpt" / "sub").mkdir(parents=True)
    (tmp_path / "ckpt" / "a.bin").write_bytes(b"a" * 2_000_000)
    (tmp_path / "ckpt" / "sub" / "b.bin").write_bytes(b"b")
    fs = make_fs(served_emulator)
    fs.put(f"{tmp_path}/ckpt/", f"{o41_location}/step-00000007/", recursive=True)
    assert versions(fs, o41_location) == ["step-00000007"]
    out = tmp_path / "back"
    fs.get(f"{o41_location}/latest/", f"{out}/", recursive=True)
    assert (out / "a.bin").read_bytes() == b"a" * 2_000_000
    assert (out / "sub" / "b.bin").read_bytes() == b"b"


def test_put_with_a_refused_target_sends_no_byte_of_the_others(
        served_emulator: Emulator, o41_location: str, tmp_path: Path) -> None:
    """Every file of a put is checked and named before any of them is sent: a target
    outside the layout (a file written into ``latest``) is refused before the artifact is
    even opened (it used to come after the files before it were sent)."""
    for name in ("a.bin", "b.bin"):
        (tmp_path / name).write_bytes(os.urandom(300_000))
    fs = make_fs(served_emulator)
    with pytest.raises(o41.ConfigError, match="files are written into a version"):
        fs.put([str(tmp_path / "a.bin"), str(tmp_path / "b.bin")],
               [f"{o41_location}/step-00000001/a.bin", f"{o41_location}/latest/b.bin"])
    artifact = o41_location.removeprefix("o41://")
    reply = requests.get(f"{served_emulator.api}/usage/read", params={"artifact": artifact},
                         headers={"Authorization": f"Bearer {served_emulator.key}"},
                         timeout=30)
    # refused before the open: the artifact does not exist, so no byte was metered into it
    assert (reply.status_code, reply.json()["error"]["code"]) == (404, "not_found")
    assert versions(fs, o41_location) == []


def test_dcp_style_metadata_renamed_last_commits_the_step(served_emulator: Emulator,
                                                          o41_location: str) -> None:
    fs = make_fs(served_emulator)
    step = f"{o41_location}/step-00000003"
    for rank in range(2):
        with fs.open(f"{step}/__{rank}_0.distcp", "wb") as f:
            f.write(os.urandom(1000))
    assert versions(fs, o41_location) == [] and fs.uncommitted() == [f"o41://{step[6:]}"]
    with fs.open(f"{step}/.metadata.tmp", "wb") as f:
        f.write(b"metadata")
    assert versions(fs, o41_location) == []
    fs.rename(f"{step}/.metadata.tmp", f"{step}/.metadata")
    assert versions(fs, o41_location) == ["step-00000003"]
    assert sorted(fs.ls(step, detail=False)) == [
        f"{step[6:]}/.metadata", f"{step[6:]}/__0_0.distcp", f"{step[6:]}/__1_0.distcp"]


def test_marker_cut_short_by_exception_commits_nothing(served_emulator: Emulator,
                                                       o41_location: str) -> None:
    fs = make_fs(served_emulator)
    fs.pipe_file(f"{o41_location}/step-00000001/array.distcp", b"x")
    with pytest.raises(OSError), fs.open(f"{o41_location}/step-00000001/commit_success.txt",
                                         "wb") as f:
        f.write(b"half a mark")
        raise OSError("disk full while writing the marker")
    assert versions(fs, o41_location) == []
    with pytest.warns(UncommittedWarning, match="step-00000001"):
        assert fs.discard_uncommitted() == [f"{o41_location}/step-00000001"]


def test_configured_marker_commits_on_close(served_emulator: Emulator, o41_location: str) -> None:
    fs = make_fs(served_emulator, markers=["*.ckpt"])
    fs.pipe_file(f"{o41_location}/step-00000005/model.ckpt", b"lightning")
    assert versions(fs, o41_location) == ["step-00000005"]


def test_step_without_commit_signal_is_named_at_exit_and_never_visible(
        served_emulator: Emulator, o41_location: str) -> None:
    script = ("import fsspec, sys\n"
              "fs = fsspec.filesystem('o41')\n"
              f"fs.pipe_file('{o41_location}/step-00000009/shard.distcp', b'no marker')\n")
    proc = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True,
                          text=True, timeout=HANG_GUARD, env=client_env(served_emulator))
    assert proc.returncode == 0, proc.stderr
    assert "UncommittedWarning" in proc.stderr
    assert f"{o41_location}/step-00000009 was written (shard.distcp) but never committed" \
        in proc.stderr
    assert versions(make_fs(served_emulator), o41_location) == []


def test_cat_file_honours_start_and_end(served_emulator: Emulator, o41_location: str) -> None:
    data = os.urandom(5 * 1024 * 1024 + 17)
    fs = make_fs(served_emulator)
    fs.pipe_file(f"{o41_location}/step-00000001/commit_success.txt", data)
    path = f"{o41_location}/latest/commit_success.txt"
    assert fs.cat_file(path) == data
    assert fs.cat_file(path, 1_000_000, 4_000_001) == data[1_000_000:4_000_001]
    assert fs.cat_file(path, -10) == data[-10:]
    with fs.open(path, "rb") as f:
        f.seek(4_000_000)
        assert f.read(100) == data[4_000_000:4_000_100]


def test_reader_never_opens_so_never_fences_the_writer(served_emulator: Emulator,
                                                       o41_location: str) -> None:
    writer, reader = make_fs(served_emulator), make_fs(served_emulator)
    writer.pipe_file(f"{o41_location}/step-00000001/commit_success.txt", b"1")
    assert reader.cat_file(f"{o41_location}/latest/commit_success.txt") == b"1"
    writer.pipe_file(f"{o41_location}/step-00000002/commit_success.txt", b"2")
    assert versions(reader, o41_location) == ["step-00000001", "step-00000002"]


def test_fresh_open_on_artifact_with_checkpoints_is_refused(served_emulator: Emulator,
                                                            o41_location: str) -> None:
    make_fs(served_emulator).pipe_file(f"{o41_location}/step-00000001/commit_success.txt", b"1")
    fresh = make_fs(served_emulator, resume=None)
    with pytest.raises(o41.HasCheckpoints) as info:
        fresh.open(f"{o41_location}/step-00000002/commit_success.txt", "wb")
    assert info.value.status == 409 and info.value.code == "has_checkpoints"


def test_fork_option_starts_a_new_artifact_from_a_checkpoint(served_emulator: Emulator,
                                                             o41_location: str) -> None:
    source = f"{o41_location}/step-00000001"
    make_fs(served_emulator).pipe_file(f"{source}/commit_success.txt", b"1")
    fork = make_fs(served_emulator, resume=source)
    target = o41_location + "-fork"
    fork.pipe_file(f"{target}/step-00000002/commit_success.txt", b"2")
    assert fork.run(target).resume_from.version == "step-00000001"
    assert versions(fork, target) == ["step-00000002"]


def test_latest_cannot_be_removed_nor_a_committed_file_renamed(served_emulator: Emulator,
                                                               o41_location: str) -> None:
    fs = make_fs(served_emulator)
    path = f"{o41_location}/step-00000001/commit_success.txt"
    fs.pipe_file(path, b"1")
    with pytest.raises(o41.IsLatest, match="is_latest"):
        fs.rm(path)
    with pytest.raises(PermissionError, match="immutable"):
        fs.mv(path, f"{o41_location}/step-00000001/other.txt")
    assert fs.cat_file(path) == b"1"


@pytest.mark.parametrize("path", ["latest/model.bin", "model.bin", "sub/model.bin"])
def test_writes_outside_a_version_are_refused(served_emulator: Emulator, o41_location: str,
                                              path: str) -> None:
    with pytest.raises((ValueError, FileNotFoundError)):
        make_fs(served_emulator).open(f"{o41_location}/{path}", "wb")


def test_missing_paths_are_file_not_found(served_emulator: Emulator, o41_location: str) -> None:
    fs = make_fs(served_emulator)
    fs.pipe_file(f"{o41_location}/step-00000001/commit_success.txt", b"1")
    for missing in (f"{o41_location}/step-00000002/x", f"{o41_location}/latest/nope",
                    f"{o41_location}-none/latest/x"):
        with pytest.raises(FileNotFoundError):
            fs.cat_file(missing)
    assert not fs.exists(f"{o41_location}/step-00000002")
    assert fs.isdir(f"{o41_location}/step-00000001")


def test_marker_left_unclosed_by_a_crash_commits_nothing(served_emulator: Emulator,
                                                        o41_location: str) -> None:
    fs = make_fs(served_emulator)
    fs.pipe_file(f"{o41_location}/step-00000001/shard.distcp", b"x")
    f = fs.open(f"{o41_location}/step-00000001/.metadata", "wb")
    f.write(b"torn")
    del f  # the writer died mid-file: the object is collected, never closed
    assert versions(fs, o41_location) == []
    with pytest.warns(UncommittedWarning):
        assert fs.discard_uncommitted() == [f"{o41_location}/step-00000001"]
