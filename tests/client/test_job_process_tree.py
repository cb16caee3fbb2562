"""A launch belongs to a job's whole process tree (o41.job): every process the trainer
starts, by fork, spawn, subprocess or exec through shells and wrappers, before or after the
first open, writes under the job's one open; a refused write fences nobody; fencing never
hangs a parent. Each test runs a real tree of processes against a served emulator and is
ordered by pipes, not by sleeps."""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

import o41
from tests.support.trainer_runs import REPO, artifact, o41_launcher, versions

if TYPE_CHECKING:
    from tests.support.client_fixtures import Emulator

pytest_plugins = ["tests.support.client_fixtures"]

WAIT = 300  # seconds a tree of a few Python processes may take on a loaded runner


def _script(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def _run(emu: Emulator, argv: list[str], **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=REPO, env=emu.client_env(**env), timeout=WAIT,
                          capture_output=True, text=True)


def _steps_and_epoch(emu: Emulator, location: str) -> tuple[list[int], int]:
    found = versions(emu.api, emu.key, location)
    return [v["step"] for v in found], artifact(emu.api, emu.key, location)["epoch"]


def _saver(location: str, step: int) -> str:
    return ("import fsspec; fs = fsspec.filesystem('o41'); "
            f"fs.pipe('{location}/step-{step:08d}/a', b'{step}'); fs.commit_pending()")


def test_o41_run_through_bash_is_one_launch(served_emulator: Emulator,
                                            o41_location: str) -> None:
    shell = f"{shlex.quote(sys.executable)} -c {shlex.quote(_saver(o41_location, 1))}; echo done"
    done = _run(served_emulator, [*o41_launcher(o41_location), "bash", "-c", shell])
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["done"]
    assert _steps_and_epoch(served_emulator, o41_location) == ([1], 1)


def test_o41_run_through_a_python_wrapper_is_one_launch(served_emulator: Emulator,
                                                        o41_location: str) -> None:
    wrapper = ("import subprocess, sys; "
               f"sys.exit(subprocess.call([sys.executable, '-c', {_saver(o41_location, 1)!r}]))")
    done = _run(served_emulator, [*o41_launcher(o41_location), sys.executable, "-c", wrapper])
    assert done.returncode == 0, done.stderr
    assert _steps_and_epoch(served_emulator, o41_location) == ([1], 1)


SPAWNED_RANKS = """
import multiprocessing as mp, sys
import fsspec

def rank(r, location, barrier):
    fs = fsspec.filesystem("o41")
    fs.exists(location)  # every rank touches the artifact before any saves
    barrier.wait()
    if r == 1:
        barrier.wait()  # rank 0 saved step 1
    fs.pipe(f"{location}/step-{r + 1:08d}/a", b"rank")
    fs.commit_pending()
    if r == 0:
        barrier.wait()

if __name__ == "__main__":
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(2)
    ranks = [ctx.Process(target=rank, args=(r, sys.argv[1], barrier)) for r in range(2)]
    for p in ranks:
        p.start()
    for p in ranks:
        p.join()
    sys.exit(max(p.exitcode for p in ranks))
"""


def test_spawned_ranks_in_write_mode_share_one_open(served_emulator: Emulator,
                                                    o41_location: str, tmp_path: Path) -> None:
    script = _script(tmp_path, "ranks.py", SPAWNED_RANKS)
    done = _run(served_emulator, [sys.executable, str(script), o41_location], O41_MODE="write")
    assert done.returncode == 0, done.stderr
    assert _steps_and_epoch(served_emulator, o41_location) == ([1, 2], 1)


def test_spawned_ranks_under_o41_run_share_its_open(served_emulator: Emulator,
                                                    o41_location: str, tmp_path: Path) -> None:
    script = _script(tmp_path, "ranks.py", SPAWNED_RANKS)
    done = _run(served_emulator, [*o41_launcher(o41_location), sys.executable, str(script),
                               o41_location])
    assert done.returncode == 0, done.stderr
    assert _steps_and_epoch(served_emulator, o41_location) == ([1, 2], 1)


def test_watcher_started_before_the_first_touch_neither_fences_nor_is_fenced(
        served_emulator: Emulator, o41_location: str, tmp_path: Path) -> None:
    """The watcher inherits O41_MODE=write and reads before its trainer touched o41://."""
    watcher = _script(tmp_path, "watcher.py", f"""
        import fsspec
        fs = fsspec.filesystem("o41")
        fs.exists("{o41_location}")
        print("looked", flush=True)
        input()
        print(fs.cat("{o41_location}/latest/a").decode(), flush=True)
        """)
    trainer = _script(tmp_path, "trainer.py", f"""
        import subprocess, sys
        watcher = subprocess.Popen([sys.executable, "{watcher}"], stdin=subprocess.PIPE,
                                   stdout=subprocess.PIPE, text=True)
        assert watcher.stdout.readline() == "looked\\n"
        import fsspec
        fs = fsspec.filesystem("o41")
        fs.pipe("{o41_location}/step-00000001/a", b"one")
        fs.commit_pending()
        out, _ = watcher.communicate("go\\n")
        assert watcher.returncode == 0 and out.split() == ["one"], (watcher.returncode, out)
        fs.pipe("{o41_location}/step-00000002/a", b"two")
        """)
    done = _run(served_emulator, [sys.executable, str(trainer)], O41_MODE="write")
    assert done.returncode == 0, done.stderr
    assert _steps_and_epoch(served_emulator, o41_location) == ([1, 2], 1)


def test_fork_pool_started_before_the_client_loaded_saves_under_one_open(
        served_emulator: Emulator, o41_location: str, tmp_path: Path) -> None:
    script = _script(tmp_path, "pool.py", f"""
        import multiprocessing as mp

        def save(step):
            import fsspec
            fs = fsspec.filesystem("o41")
            fs.pipe(f"{o41_location}/step-{{step:08d}}/a", str(step).encode())
            fs.commit_pending()
            return step

        if __name__ == "__main__":
            with mp.get_context("fork").Pool(2) as pool:
                print(*[pool.apply(save, (step,)) for step in (1, 2, 3)])
        """)
    done = _run(served_emulator, [sys.executable, str(script)])
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["1", "2", "3"]
    assert _steps_and_epoch(served_emulator, o41_location) == ([1, 2, 3], 1)


# The worker's main thread blocks SIGTERM, so the kernel hands Pool.terminate's SIGTERM to
# another of its threads: what happens, now and then, to a worker the signal reaches just
# before its main thread blocks on the pool's queue. A handler in Python would run only when
# the main thread next runs Python code, that is never, and terminate() would wait for good.
POOL_TERMINATED = """
import multiprocessing as mp, os, signal, sys, threading
location, when = sys.argv[1], sys.argv[2]

def save_then_block(step, ready):
    import fsspec
    fs = fsspec.filesystem("o41")
    fs.pipe(f"{location}/step-{step:08d}/a", b"saved")  # a step that waits commit_after
    fs.commit_pending()
    threading.Thread(target=threading.Event().wait, daemon=True).start()  # a loader thread
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
    os.write(ready, b"r")
    threading.Event().wait()

if __name__ == "__main__":
    if when == "after":  # the trainer saved first, so SIGTERM commits its pending step
        import fsspec
        fsspec.filesystem("o41").pipe(f"{location}/step-00000001/a", b"saved")
    read, write = os.pipe()
    pool = mp.get_context("fork").Pool(1)
    pool.apply_async(save_then_block, (2, write))
    os.read(read, 1)
    pool.terminate()  # SIGTERM to the worker, then a join
    print("terminated", flush=True)
"""


@pytest.mark.parametrize("when", ["before", "after"])
def test_pool_terminate_ends_a_worker_that_saved_whichever_thread_takes_sigterm(
        served_emulator: Emulator, o41_location: str, tmp_path: Path, when: str) -> None:
    """A pool started before the client loaded, and one started after the trainer saved."""
    script = _script(tmp_path, "pool.py", POOL_TERMINATED)
    proc = subprocess.Popen([sys.executable, str(script), o41_location, when], cwd=REPO,
                            env=served_emulator.client_env(), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=WAIT)
    finally:
        if proc.poll() is None:  # the worker too: it is the one that would hang
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
    assert proc.returncode == 0 and out.split() == ["terminated"], err
    assert _steps_and_epoch(served_emulator, o41_location) == (
        ([1, 2] if when == "after" else [2]), 1)


def test_overlapping_forked_saves_all_commit(served_emulator: Emulator, o41_location: str,
                                             tmp_path: Path) -> None:
    script = _script(tmp_path, "saves.py", f"""
        import os
        import fsspec

        children = []
        for step in (1, 2, 3):
            read, write = os.pipe()
            pid = os.fork()
            if pid == 0:  # a background save: all three are open at once
                fs = fsspec.filesystem("o41", skip_instance_cache=True)
                with fs.open(f"{o41_location}/step-{{step:08d}}/a", "wb") as f:
                    f.write(b"step %d" % step)
                    os.read(read, 1)
                fs.commit_pending()
                os._exit(0)
            children.append((pid, write))
        codes = []
        for pid, write in children:  # steps commit in order
            os.write(write, b"g")
            codes.append(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
        print(*codes)
        """)
    done = _run(served_emulator, [sys.executable, str(script)])
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["0", "0", "0"]
    assert _steps_and_epoch(served_emulator, o41_location) == ([1, 2, 3], 1)


def test_evaluation_writing_into_a_committed_step_is_refused_and_fences_nobody(
        served_emulator: Emulator, o41_location: str, tmp_path: Path) -> None:
    evaluation = ("import fsspec; fs = fsspec.filesystem('o41'); "
                  f"fs.pipe('{o41_location}/step-00000001/eval.json', b'{{}}')")
    trainer = _script(tmp_path, "trainer.py", f"""
        import subprocess, sys
        import fsspec
        fs = fsspec.filesystem("o41")
        fs.pipe("{o41_location}/step-00000001/a", b"one")
        fs.commit_pending()
        done = subprocess.run([sys.executable, "-c", {evaluation!r}], capture_output=True,
                              text=True)
        print(done.returncode, "version_exists" in done.stderr)
        fs.pipe("{o41_location}/step-00000002/a", b"two")
        """)
    done = _run(served_emulator, [sys.executable, str(trainer)])
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["1", "True"]
    assert _steps_and_epoch(served_emulator, o41_location) == ([1, 2], 1)


def test_forked_reader_sees_the_save_its_parent_just_closed(
        served_emulator: Emulator, o41_location: str) -> None:
    """The parent's step waits commit_after (5 s); a fork commits it first."""
    script = f"""
import os
import fsspec
fs = fsspec.filesystem("o41")
fs.pipe("{o41_location}/step-00000001/a", b"one")
pid = os.fork()
if pid == 0:
    reader = fsspec.filesystem("o41", skip_instance_cache=True)
    os._exit(0 if reader.cat("{o41_location}/latest/a") == b"one" else 3)
print(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
"""
    done = _run(served_emulator, [sys.executable, "-c", script])
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["0"]


def test_cp_onto_an_existing_step_is_refused_before_it_opens(
        served_emulator: Emulator, o41_location: str, tmp_path: Path) -> None:
    (tmp_path / "ckpt").mkdir()
    (tmp_path / "ckpt" / "a").write_bytes(b"a")
    run = o41.open(o41_location, resume="latest", api=o41.ApiClient(served_emulator.api,
                                                                     served_emulator.key),
                   holder="the-trainer")
    run.save(1, tmp_path / "ckpt")
    o41_cmd = str(Path(sys.executable).with_name("o41"))
    done = _run(served_emulator, [o41_cmd, "cp", str(tmp_path / "ckpt"),
                               f"{o41_location}/step-00000001"])
    assert done.returncode == int(o41.ExitCode.CONFLICT), done.stderr
    assert "version_exists" in done.stderr
    state = artifact(served_emulator.api, served_emulator.key, o41_location)
    assert (state["epoch"], state["holder"]) == (1, "the-trainer")


def test_fenced_pool_worker_raises_and_its_parent_stops_at_its_next_write(
        served_emulator: Emulator, o41_location: str, tmp_path: Path) -> None:
    script = _script(tmp_path, "pool.py", f"""
        import multiprocessing as mp, sys
        import fsspec
        import o41

        def save(step):
            fs = fsspec.filesystem("o41")
            fs.pipe(f"{o41_location}/step-{{step:08d}}/a", b"x")
            fs.commit_pending()

        if __name__ == "__main__":
            fs = fsspec.filesystem("o41")
            save(1)
            with mp.get_context("fork").Pool(1) as pool:
                print("opened", flush=True)
                sys.stdin.readline()  # a newer launch opens meanwhile
                try:
                    pool.apply(save, (2,))
                except o41.Fenced:
                    print("worker fenced", flush=True)
            save(3)
            print("trained on", flush=True)
        """)
    proc = subprocess.Popen([sys.executable, str(script)], cwd=REPO, text=True,
                            env=served_emulator.client_env(O41_FENCE_CHECK="0"),
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    try:
        assert proc.stdout is not None and proc.stdout.readline() == "opened\n"
        o41.open(o41_location, resume="latest", holder="the-newer-box",
                 api=o41.ApiClient(served_emulator.api, served_emulator.key))
        out, err = proc.communicate("go\n", timeout=WAIT)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == int(o41.ExitCode.FENCED), err
    assert out.split("\n")[0] == "worker fenced" and "trained on" not in out
    assert "o41: fenced:" in err and "the-newer-box" in err
