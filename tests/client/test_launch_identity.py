"""Who is one launch: a fork after the open is the same launch, and so is what the job
starts (tests/client/test_job_process_tree.py has the rest of the tree); a reader never
fences; client settings are bounded; errors are the builtin ones."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import fsspec
import pytest

import o41
from o41.writing import registry
from tests.support.deadlines import HANG_GUARD
from tests.support.trainer_runs import REPO, artifact, o41_launcher, versions

if TYPE_CHECKING:
    from tests.support.client_fixtures import Emulator

pytest_plugins = ["tests.support.client_fixtures"]


def run_python(emu: Emulator, script: str, launcher: list[str] | None = None,
               **env: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([*(launcher or []), sys.executable, "-c", script], cwd=REPO,
                          env=emu.client_env(**env), timeout=HANG_GUARD, capture_output=True,
                          text=True)
    assert done.returncode == 0, done.stderr
    return done


def test_process_forked_after_the_open_writes_under_its_parents_open(
        served_emulator: Emulator, o41_location: str) -> None:
    script = f"""
import os, fsspec
fs = fsspec.filesystem("o41")
fs.pipe("{o41_location}/step-00000001/a", b"parent")
fs.commit_pending()  # before the child's later step: a step commits after the one before
pid = os.fork()
if pid == 0:  # a background save: a new instance, in the child, is the same launch
    child = fsspec.filesystem("o41", skip_instance_cache=True)
    child.pipe("{o41_location}/step-00000002/a", b"child")
    child.commit_pending()  # os._exit runs no exit hook: nothing else would commit it
    os._exit(0)
assert os.waitpid(pid, 0)[1] == 0
fs.pipe("{o41_location}/step-00000003/a", b"parent again")
"""
    run_python(served_emulator, script)
    found = versions(served_emulator.api, served_emulator.key, o41_location)
    assert [(v["step"], v["epoch"]) for v in found] == [(1, 1), (2, 1), (3, 1)]
    assert len({v["holder"] for v in found}) == 1
    assert artifact(served_emulator.api, served_emulator.key, o41_location)["epoch"] == 1


def test_evaluation_subprocess_of_a_write_mode_trainer_reads_under_its_open(
        served_emulator: Emulator, o41_location: str) -> None:
    evaluation = ("import fsspec; fs = fsspec.filesystem('o41'); print(fs.mode);"
                  f"print(fs.cat('{o41_location}/latest/a').decode())")
    script = f"""
import subprocess, sys, fsspec
fs = fsspec.filesystem("o41")
assert fs.mode == "write"
fs.pipe("{o41_location}/step-00000001/a", b"one")
fs.commit_pending()  # visible to another process now, not only after commit_after
print(subprocess.run([sys.executable, "-c", {evaluation!r}], check=True,
                     capture_output=True, text=True).stdout, end="")
fs.pipe("{o41_location}/step-00000002/a", b"two")  # not fenced by its own evaluation
"""
    done = run_python(served_emulator, script, O41_MODE="write")
    assert done.stdout.split() == ["write", "one"]  # the job's mode; the job's one open
    assert artifact(served_emulator.api, served_emulator.key, o41_location)["epoch"] == 1
    assert [v["step"] for v in versions(served_emulator.api, served_emulator.key, o41_location)] \
        == [1, 2]


def test_o41_run_hands_its_open_to_every_process_below_it(served_emulator: Emulator,
                                                          o41_location: str) -> None:
    probe = ("import fsspec; from o41.writing import registry; fs = fsspec.filesystem('o41');"
             f"print(registry.handed_over(fs.api, '{o41_location[6:]}', fs.holder, workers=1)"
             " is not None)")
    script = f"""
import subprocess, sys, fsspec
from o41.writing import registry
fs = fsspec.filesystem("o41")
print(registry.handed_over(fs.api, "{o41_location[6:]}", fs.holder, workers=1) is not None)
print(subprocess.run([sys.executable, "-c", {probe!r}], check=True, capture_output=True,
                     text=True).stdout, end="")
fs.pipe("{o41_location}/step-00000001/a", b"a")
"""
    done = run_python(served_emulator, script, launcher=o41_launcher(o41_location))
    assert done.stdout.split() == ["True", "True"]
    assert artifact(served_emulator.api, served_emulator.key, o41_location)["epoch"] == 1


def test_reader_never_opens_nor_fences_the_writer(served_emulator: Emulator,
                                                  o41_location: str) -> None:
    writer = fsspec.filesystem("o41", api_url=served_emulator.api, api_key=served_emulator.key,
                               holder="the-writer", skip_instance_cache=True)
    writer.pipe(f"{o41_location}/step-00000001/a", b"a")
    writer.commit_pending()
    reader = fsspec.filesystem("o41", api_url=served_emulator.api, api_key=served_emulator.key,
                               holder="a-reader", skip_instance_cache=True)
    assert reader.mode == "auto"
    assert reader.cat(f"{o41_location}/latest/a") == b"a"
    assert reader.exists(f"{o41_location}/step-00000001/a")
    assert reader.ls(o41_location, detail=False) == [f"{o41_location[6:]}/step-00000001"]
    writer.pipe(f"{o41_location}/step-00000002/a", b"b")
    assert artifact(served_emulator.api, served_emulator.key, o41_location)["epoch"] == 1


@pytest.mark.parametrize("text", ["0.0001", "-1", "1e9", "soon", "nan"])
def test_fence_check_outside_its_bounds_is_refused(text: str) -> None:
    with pytest.raises(o41.ConfigError, match="O41_FENCE_CHECK"):
        registry.fence_check_every({"O41_FENCE_CHECK": text})


@pytest.mark.parametrize(("text", "every"), [("0", 0.0), ("0.5", 0.5), ("", 2.0)])
def test_fence_check_within_bounds_or_off(text: str, every: float) -> None:
    assert registry.fence_check_every({"O41_FENCE_CHECK": text}) == every


@pytest.mark.parametrize("text", ["{not json", "[]", '{"epoch": 1}',
                                  '{"api_url": "u", "artifact": "a/b", "token": "t", '
                                  '"holder": "h", "epoch": "one"}'])
def test_bad_o41_run_is_a_config_error_naming_it(served_emulator: Emulator, o41_location: str,
                                                 monkeypatch: pytest.MonkeyPatch,
                                                 text: str) -> None:
    monkeypatch.setenv("O41_RUN", text)
    fs = fsspec.filesystem("o41", api_url=served_emulator.api, api_key=served_emulator.key,
                           holder=f"bad-run-{len(text)}", skip_instance_cache=True)
    with pytest.raises(o41.ConfigError, match="O41_RUN"):
        fs.pipe(f"{o41_location}/step-00000001/a", b"a")


def test_write_mode_belongs_to_every_rank_of_the_job() -> None:
    """Every rank opens at its first touch, through the job's one open (o41.job)."""
    assert registry.mode_of(None, {"O41_MODE": "write", "RANK": "0"}) == "write"
    assert registry.mode_of(None, {"O41_MODE": "write", "RANK": "1"}) == "write"
    assert registry.mode_of(None, {"O41_MODE": " Write "}) == "write"
    with pytest.raises(o41.ConfigError, match="O41_MODE"):
        registry.mode_of(None, {"O41_MODE": "sometimes"})
    with pytest.raises(o41.ConfigError, match="mode="):
        registry.mode_of("sometimes")


def test_errors_are_the_builtin_ones_as_on_s3fs(served_emulator: Emulator,
                                                o41_location: str) -> None:
    assert issubclass(o41.Forbidden, PermissionError)
    assert issubclass(o41.NotFound, FileNotFoundError)
    assert issubclass(o41.VersionExists, FileExistsError)
    assert issubclass(o41.Immutable, FileExistsError) and issubclass(o41.Immutable,
                                                                     PermissionError)
    exc = o41.NotFound("no such version", status=404)
    assert str(exc) == "no such version" and exc.code == "not_found" and exc.status == 404
    other = served_emulator.make_key("elsewhere/", "write")
    fs = fsspec.filesystem("o41", api_url=served_emulator.api, api_key=other,
                           skip_instance_cache=True)
    with pytest.raises(PermissionError):  # not an exists() that answers False
        fs.exists(f"{o41_location}/step-00000001/a")


@pytest.mark.skipif(shutil.which("unshare") is None, reason="no unshare")
def test_reader_in_another_pid_namespace_beside_a_writer_takes_nothing_of_it(
        served_emulator: Emulator, o41_location: str, tmp_path: Path) -> None:
    """Nothing of a file being written is on local disk, so a reader that shares the temp
    directory from another PID namespace (where the writer's pid is not alive) has nothing
    to reclaim by mistake."""
    if subprocess.run(["unshare", "-p", "-f", "--mount-proc", "true"]).returncode:
        pytest.skip("unshare -p is not allowed here")
    writer = fsspec.filesystem("o41", api_url=served_emulator.api, api_key=served_emulator.key,
                               holder="ns-writer", skip_instance_cache=True)
    writer.pipe(f"{o41_location}/step-00000001/a", b"first")
    data = os.urandom(24 << 20)
    reader = ("import fsspec; fs = fsspec.filesystem('o41'); "
              f"print(fs.cat('{o41_location}/latest/a').decode())")
    with writer.open(f"{o41_location}/step-00000002/big.bin", "wb") as f:
        f.write(data[:12 << 20])
        done = subprocess.run(["unshare", "-p", "-f", "--mount-proc", sys.executable, "-c",
                               reader], cwd=REPO, timeout=HANG_GUARD, capture_output=True,
                              text=True, env=served_emulator.client_env(TMPDIR=str(tmp_path)))
        assert done.returncode == 0 and done.stdout.strip() == "first", done.stderr
        f.write(data[12 << 20:])
    assert writer.cat(f"{o41_location}/latest/big.bin") == data
    assert list(tmp_path.iterdir()) == []
