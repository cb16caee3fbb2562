"""A step of files closed one at a time is one version, committed soon after its last close
(``o41.writing.deferred``, docs/fsspec.md): never half a step, visible at once to its own
process, at
exit, on SIGTERM and when a later step begins; a kill -9 before then leaves the latest."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING

import pytest

import o41
from o41.fs.filesystem import O41FileSystem
from tests.support import client_helpers
from tests.support.deadlines import HANG_GUARD
from tests.support.trainer_runs import REPO, versions

if TYPE_CHECKING:
    from tests.support.client_fixtures import Emulator

pytest_plugins = ["tests.support.client_fixtures"]


make_fs = partial(client_helpers.make_fs, prefix="box")  # holders box-<random>


def committed(emu: Emulator, location: str) -> dict[int, list[str]]:
    """What another process sees: each version's step and file names."""
    found = {}
    for v in versions(emu.api, emu.key, location):
        data = make_fs(emu, mode="read").version(location[6:], v["version"])
        found[v["step"]] = sorted(f.name for f in data.files)
    return found


def wait_for(what: Callable[[], object], seconds: float = 120.0) -> object:
    """Poll until ``what()`` is truthy (a condition, not a timing: no bound is asserted)."""
    deadline = time.monotonic() + seconds
    while not (value := what()):
        assert time.monotonic() < deadline, "the condition never held"
        time.sleep(0.05)
    return value


def save_step(fs: O41FileSystem, location: str, step: int) -> None:
    """A plain loop's save: the model, then the optimizer, each closed before the next."""
    with fs.open(f"{location}/step-{step:08d}/model.pt", "wb") as f:
        f.write(b"model %d" % step)
    with fs.open(f"{location}/step-{step:08d}/optim.pt", "wb") as f:
        f.write(b"optim %d" % step)


def test_files_closed_in_turn_are_one_version_once_none_is_open_for_commit_after(
        served_emulator: Emulator, o41_location: str) -> None:
    fs = make_fs(served_emulator, commit_after=0.5)
    save_step(fs, o41_location, 1)
    seen: list[dict[int, list[str]]] = []

    def visible() -> dict[int, list[str]]:
        seen.append(committed(served_emulator, o41_location))
        return seen[-1]

    wait_for(visible)  # the background commit, with no call of this process's
    assert seen[-1] == {1: ["model.pt", "optim.pt"]}
    assert all(s in ({}, seen[-1]) for s in seen)  # never half of the step
    assert fs.uncommitted() == []


def test_a_write_into_a_later_step_commits_the_earlier_one_first(
        served_emulator: Emulator, o41_location: str) -> None:
    fs = make_fs(served_emulator, commit_after=600)
    save_step(fs, o41_location, 1)
    assert committed(served_emulator, o41_location) == {}
    with fs.open(f"{o41_location}/step-00000002/model.pt", "wb") as f:
        assert committed(served_emulator, o41_location) == {1: ["model.pt", "optim.pt"]}
        f.write(b"next")
    assert fs.uncommitted() == [f"{o41_location}/step-00000002"]


def test_a_read_in_the_artifact_by_the_writing_process_sees_its_step_whole(
        served_emulator: Emulator, o41_location: str) -> None:
    fs = make_fs(served_emulator, commit_after=600)
    save_step(fs, o41_location, 1)
    assert fs.cat(f"{o41_location}/latest/optim.pt") == b"optim 1"
    save_step(fs, o41_location, 2)
    assert fs.ls(o41_location, detail=False)[-1].endswith("step-00000002")
    assert committed(served_emulator, o41_location) == {1: ["model.pt", "optim.pt"],
                                                     2: ["model.pt", "optim.pt"]}


def test_exists_before_the_steps_next_file_leaves_the_step_open(
        served_emulator: Emulator, o41_location: str) -> None:
    fs = make_fs(served_emulator, commit_after=600)
    with fs.open(f"{o41_location}/step-00000001/model.safetensors", "wb") as f:
        f.write(b"tensors")
    assert not fs.exists(f"{o41_location}/step-00000001/config.json")
    fs.pipe(f"{o41_location}/step-00000001/config.json", b"{}")
    fs.commit_pending()
    assert committed(served_emulator, o41_location) == {1: ["config.json", "model.safetensors"]}


def test_a_step_committed_already_refuses_a_late_file_naming_commit_after(
        served_emulator: Emulator, o41_location: str) -> None:
    fs = make_fs(served_emulator, commit_after=600)
    fs.pipe(f"{o41_location}/step-00000001/model.pt", b"m")
    fs.commit_pending()
    with pytest.raises(o41.VersionExists, match="O41_COMMIT_AFTER") as info:
        fs.pipe(f"{o41_location}/step-00000001/optim.pt", b"o")
    assert info.value.status == 409 and info.value.code == "version_exists"
    assert committed(served_emulator, o41_location) == {1: ["model.pt"]}


@pytest.mark.parametrize("value", ["-1", "601", "soon", "nan"])
def test_commit_after_outside_its_bounds_is_refused(served_emulator: Emulator, value: str,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("O41_COMMIT_AFTER", value)
    with pytest.raises(o41.ConfigError, match="O41_COMMIT_AFTER"):
        make_fs(served_emulator)
    with pytest.raises(o41.ConfigError, match="commit_after"):
        make_fs(served_emulator, commit_after=value)


# -- how the process ends ---------------------------------------------------------------------

SCRIPT = """
import signal, sys, fsspec
fs = fsspec.filesystem("o41", commit_after=600)
def save(step):
    for name in ("model.pt", "optim.pt"):
        with fs.open(f"{location}/step-{{step:08d}}/{{name}}", "wb") as f:
            f.write(name.encode())
save(1)
fs.commit_pending()
save(2)
print("saved", flush=True)
{end}
"""


def run_script(emu: Emulator, location: str, end: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-c", SCRIPT.format(location=location, end=end)],
                            cwd=REPO, env=emu.client_env(), stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.mark.parametrize(("end", "code"), [
    ("", 0),
    ("raise RuntimeError('the loop failed after its save')", 1),
    ("sys.exit(3)", 3),
])
def test_exit_commits_the_step_whose_files_all_closed(
        served_emulator: Emulator, o41_location: str, end: str, code: int) -> None:
    proc = run_script(served_emulator, o41_location, end)
    out, err = proc.communicate(timeout=HANG_GUARD)
    assert proc.returncode == code, err
    assert committed(served_emulator, o41_location) == {1: ["model.pt", "optim.pt"],
                                                     2: ["model.pt", "optim.pt"]}


def test_sigterm_commits_the_step_then_ends_the_process_as_sigterm_does(
        served_emulator: Emulator, o41_location: str) -> None:
    proc = run_script(served_emulator, o41_location, "sys.stdin.read()")
    assert proc.stdout is not None and proc.stdout.readline() == "saved\n"
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=HANG_GUARD)
    assert proc.returncode == -signal.SIGTERM, err
    assert committed(served_emulator, o41_location) == {1: ["model.pt", "optim.pt"],
                                                     2: ["model.pt", "optim.pt"]}


def test_sigterm_handler_of_the_trainer_still_runs_after_the_commit(
        served_emulator: Emulator, o41_location: str) -> None:
    handler = ("signal.signal(signal.SIGTERM, lambda *a: (print('own handler', flush=True), "
               "sys.exit(0)))\n")
    proc = subprocess.Popen(
        [sys.executable, "-c", "import signal, sys\n" + handler + SCRIPT.format(
            location=o41_location, end="sys.stdin.read()")],
        cwd=REPO, env=served_emulator.client_env(), stdin=subprocess.PIPE,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline() == "saved\n"
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=HANG_GUARD)
    assert proc.returncode == 0 and out == "own handler\n", err
    assert sorted(committed(served_emulator, o41_location)) == [1, 2]


def test_kill_9_before_the_commit_leaves_the_previous_step_as_latest(
        served_emulator: Emulator, o41_location: str) -> None:
    proc = run_script(served_emulator, o41_location, "sys.stdin.read()")
    assert proc.stdout is not None and proc.stdout.readline() == "saved\n"
    proc.kill()
    proc.communicate(timeout=HANG_GUARD)
    assert committed(served_emulator, o41_location) == {1: ["model.pt", "optim.pt"]}
    assert make_fs(served_emulator, mode="read").cat(f"{o41_location}/latest/optim.pt") \
        == b"optim.pt"


def test_a_file_cut_short_by_an_exception_leaves_no_half_step(
        served_emulator: Emulator, o41_location: str) -> None:
    end = ("with fs.open(f'{location}/step-00000003/model.pt', 'wb') as f:\n"
           "    f.write(b'half')\n"
           "with fs.open(f'{location}/step-00000003/optim.pt', 'wb') as f:\n"
           "    f.write(b'cut')\n"
           "    raise MemoryError('the optimizer state did not fit')\n").replace(
               "{location}", o41_location)
    proc = run_script(served_emulator, o41_location, end)
    _, err = proc.communicate(timeout=HANG_GUARD)
    assert proc.returncode == 1 and "MemoryError" in err
    assert "step-00000003 was written" in err  # named as never committed
    assert sorted(committed(served_emulator, o41_location)) == [1, 2]
