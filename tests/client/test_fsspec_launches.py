"""Who opens, when, and what a write outside a transaction does (docs/fsspec.md).

One process is one launch: its filesystem instances share one open. A reader never opens;
``mode="write"`` opens at the first touch; ``o41 run`` opens before its command starts.
Files closed outside a transaction commit their step once none has been open for
``commit_after`` seconds (tests/client/test_fsspec_commit_after.py); ``commit_after=0`` commits at
each close, and ``fs.commit_pending()`` at once.
"""

from __future__ import annotations

import io
import secrets
import subprocess
import sys
import threading
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

import fsspec
import pytest

import o41
from tests.support import client_helpers
from tests.support.deadlines import HANG_GUARD
from tests.support.trainer_runs import REPO, artifact, versions

if TYPE_CHECKING:
    from tests.support.client_fixtures import Emulator

pytest_plugins = ["tests.support.client_fixtures"]


make_fs = partial(client_helpers.make_fs, prefix="box")  # holders box-<random>


def steps(emu: Emulator, location: str) -> list[int]:
    return [v["step"] for v in versions(emu.api, emu.key, location)]


def test_with_commit_after_zero_each_file_closed_outside_a_transaction_is_visible_after_close(
        served_emulator: Emulator, o41_location: str) -> None:
    fs = make_fs(served_emulator, commit_after=0)
    with fs.open(f"{o41_location}/step-00000001/model.pt", "wb") as f:
        f.write(b"weights")
    assert fs.exists(f"{o41_location}/step-00000001/model.pt")
    fs.pipe(f"{o41_location}/step-00000002/state.json", b"{}")
    fs.touch(f"{o41_location}/step-00000003/done")
    assert steps(served_emulator, o41_location) == [1, 2, 3]
    assert fs.cat(f"{o41_location}/latest/done") == b""


def test_torch_save_into_fsspec_open_commits(o41_env: Emulator, o41_location: str) -> None:
    torch = pytest.importorskip("torch")
    with fsspec.open(f"{o41_location}/step-00000007/model.pt", "wb") as f:
        torch.save({"w": torch.ones(3)}, f)
    with fsspec.open(f"{o41_location}/latest/model.pt", "rb") as f:
        assert torch.equal(torch.load(io.BytesIO(f.read()))["w"], torch.ones(3))


def test_second_single_file_of_a_committed_step_fails_loudly_naming_the_remedy(
        served_emulator: Emulator, o41_location: str) -> None:
    fs = make_fs(served_emulator)
    fs.pipe(f"{o41_location}/step-00000001/model.pt", b"m")
    fs.commit_pending()
    with pytest.raises(o41.VersionExists, match=r"5 s \(commit_after.*fs\.transaction") as info:
        fs.pipe(f"{o41_location}/step-00000001/optim.pt", b"o")
    assert info.value.status == 409 and info.value.code == "version_exists"
    assert [f for f in fs.ls(f"{o41_location}/step-00000001", detail=False)] == [
        f"{o41_location[6:]}/step-00000001/model.pt"]


def test_file_at_the_top_goes_to_the_step_in_its_name_and_last_reads_the_latest(
        served_emulator: Emulator, o41_location: str) -> None:
    fs = make_fs(served_emulator)
    fs.pipe(f"{o41_location}/epoch=0-step=10.ckpt", b"ten")
    fs.pipe(f"{o41_location}/epoch=0-step=20.ckpt", b"twenty")
    assert steps(served_emulator, o41_location) == [10]  # committed by the write of a later step
    fs.commit_pending()
    assert steps(served_emulator, o41_location) == [10, 20]
    assert fs.cat(f"{o41_location}/epoch=0-step=10.ckpt") == b"ten"
    with pytest.raises(ValueError, match="needs a step"):
        fs.open(f"{o41_location}/last.ckpt", "wb")
    with pytest.raises(ValueError, match="lightning_logs"):
        fs.makedirs(f"{o41_location}/lightning_logs/version_0", exist_ok=True)


def test_latest_is_held_until_a_marker_open_a_listing_or_invalidate_cache(
        served_emulator: Emulator, o41_location: str) -> None:
    writer, reader = make_fs(served_emulator), make_fs(served_emulator, mode="read")
    writer.pipe(f"{o41_location}/step-00000001/.metadata", b"1")
    assert reader.cat(f"{o41_location}/latest/.metadata") == b"1"
    writer.pipe(f"{o41_location}/step-00000002/x.bin", b"2")
    writer.commit_pending()
    with pytest.raises(FileNotFoundError):  # still step-00000001, which has no x.bin
        reader.cat(f"{o41_location}/latest/x.bin")
    reader.invalidate_cache()
    assert reader.cat(f"{o41_location}/latest/x.bin") == b"2"
    writer.pipe(f"{o41_location}/step-00000003/.metadata", b"3")
    assert reader.cat(f"{o41_location}/latest/.metadata") == b"3"  # a marker: a new load


def test_reader_mode_never_opens_and_refuses_writes(served_emulator: Emulator,
                                                    o41_location: str) -> None:
    writer = make_fs(served_emulator)
    writer.pipe(f"{o41_location}/step-00000001/a", b"a")
    writer.commit_pending()
    epoch = artifact(served_emulator.api, served_emulator.key, o41_location)["epoch"]
    reader = make_fs(served_emulator, mode="read")
    assert reader.ls(o41_location, detail=False) == [f"{o41_location[6:]}/step-00000001"]
    with pytest.raises(ValueError, match="only reads"):
        reader.pipe(f"{o41_location}/step-00000002/a", b"a")
    assert artifact(served_emulator.api, served_emulator.key, o41_location)["epoch"] == epoch


def test_write_mode_opens_at_the_first_touch_so_the_old_box_is_fenced_before_a_read(
        served_emulator: Emulator, o41_location: str) -> None:
    old = make_fs(served_emulator)
    old.pipe(f"{o41_location}/step-00000001/a", b"a")
    old.commit_pending()
    relaunch = make_fs(served_emulator, mode="write")
    assert relaunch.cat(f"{o41_location}/latest/a") == b"a"  # opened before this read
    with pytest.raises(o41.Fenced):
        old.pipe(f"{o41_location}/step-00000002/a", b"late")
    assert steps(served_emulator, o41_location) == [1]


def test_instances_of_many_threads_share_one_open(served_emulator: Emulator,
                                                  o41_location: str) -> None:
    holder = f"one-launch-{secrets.token_hex(3)}"

    def save(step: int) -> None:  # fsspec makes one instance per thread
        fs = fsspec.filesystem("o41", api_url=served_emulator.api, api_key=served_emulator.key,
                               holder=holder)
        fs.pipe(f"{o41_location}/step-{step:08d}/a", b"a")

    for step in (1, 2, 3):
        thread = threading.Thread(target=save, args=(step,))
        thread.start()
        thread.join()
    assert {v["epoch"] for v in versions(served_emulator.api, served_emulator.key, o41_location)} \
        == {1}
    assert artifact(served_emulator.api, served_emulator.key, o41_location)["epoch"] == 1


@pytest.mark.parametrize("version", ["step-٠٠٠٠٠٠٠٥", "step-0000000５", "step-123456789"])
def test_version_names_take_ascii_digits_only(served_emulator: Emulator, o41_location: str,
                                              version: str) -> None:
    with pytest.raises(ValueError):
        make_fs(served_emulator).pipe(f"{o41_location}/{version}/a", b"a")
    with pytest.raises(ValueError):
        o41.Location.parse(f"{o41_location}/{version}")
    assert steps(served_emulator, o41_location) == []


def test_o41_run_holds_the_open_for_its_command(served_emulator: Emulator,
                                                o41_location: str) -> None:
    script = ("import fsspec; fs = fsspec.filesystem('o41');"
              f"fs.pipe('{o41_location}/step-00000001/a', b'a')")
    done = subprocess.run([str(Path(sys.executable).with_name("o41")), "run", o41_location,
                           "--", sys.executable, "-c", script], cwd=REPO, timeout=HANG_GUARD,
                          capture_output=True, text=True, env=served_emulator.client_env())
    assert done.returncode == 0, done.stderr
    assert f"o41 run: opened {o41_location} at epoch 1" in done.stderr
    assert [v["epoch"] for v in versions(served_emulator.api, served_emulator.key, o41_location)] \
        == [1]
    assert artifact(served_emulator.api, served_emulator.key, o41_location)["epoch"] == 1


def test_fenced_process_exits_8_with_one_line_naming_the_newer_holder(
        served_emulator: Emulator, o41_location: str) -> None:
    script = ("import fsspec, o41\n"
              "fs = fsspec.filesystem('o41')\n"
              f"fs.pipe('{o41_location}/step-00000001/a', b'a')\n"
              "fs.commit_pending()\n"
              f"o41.open('{o41_location}', resume='latest', holder='the-relaunch')\n"
              "try:\n"
              f"    fs.pipe('{o41_location}/step-00000002/a', b'late')\n"
              "except PermissionError:\n"
              "    pass  # what Lightning's _atomic_save does\n"
              "print('trained on')\n")
    done = subprocess.run([sys.executable, "-c", script], cwd=REPO, timeout=HANG_GUARD,
                          capture_output=True, text=True, env=served_emulator.client_env())
    assert done.returncode == 8
    assert "trained on" not in done.stdout
    fenced = [ln for ln in done.stderr.splitlines() if ln.startswith("o41: fenced: ")]
    assert len(fenced) == 1 and "holder 'the-relaunch' at epoch 2" in fenced[0]
    assert steps(served_emulator, o41_location) == [1]
