"""A trainer's saves outlive a storage outage: while the region's S3 server is unreachable
the emulator answers 503 `unavailable` with Retry-After (never 500), the client waits and
tries again under its one retry policy, and every step commits whole once storage is back.

The emulator (in a thread of this process) reaches the session's S3 server through a door
the test shuts (tests/support/s3_door.py), while two trainers, each its own launch on its
own artifact, save steps of two files.
"""

from __future__ import annotations

import secrets
import threading
from dataclasses import fields, replace

import fsspec
import pytest

from emulator import ThreadedEmulator
from o41.fs.filesystem import O41FileSystem
from o41.transport import retry
from tests.support.backends import make_settings
from tests.support.client_helpers import blob
from tests.support.s3_door import s3_door

STEPS = 6
OUTAGE_AT = 3  # the step both trainers start once storage is gone


def files_of(trainer: int, step: int) -> dict[str, bytes]:
    return {"model.bin": blob(600_000, seed=100 * trainer + step),
            "optim.bin": blob(300_000, seed=100 * trainer + step + 50)}


def step_name(step: int) -> str:
    return f"step-{step:08d}"


def test_saves_during_an_s3_outage_all_commit_once_storage_is_back(
        tmp_path, request: pytest.FixtureRequest, s3_server,
        monkeypatch: pytest.MonkeyPatch) -> None:
    statuses: list[int] = []
    answered = threading.Event()  # the client has met the outage
    real_status = retry.Attempts.status

    def status(self: retry.Attempts, code: int, retry_after: str | None,
               error: BaseException) -> None:
        statuses.append(code)
        if code == 503:
            answered.set()
        real_status(self, code, retry_after, error)

    monkeypatch.setattr(retry.Attempts, "status", status)
    monkeypatch.setenv("O41_JOBS_DIR", str(tmp_path / "jobs"))
    (tmp_path / "jobs").mkdir(mode=0o700)

    with s3_door(s3_server.endpoint) as door:
        settings = replace(make_settings(tmp_path, request, "s3"), s3_endpoint=door.endpoint)
        given = {f.name: getattr(settings, f.name) for f in fields(settings)}
        with ThreadedEmulator(**given) as emu:
            artifacts = [f"outage/run-{secrets.token_hex(4)}" for _ in range(2)]
            at_outage = threading.Barrier(3)
            door_shut = threading.Event()
            errors: list[BaseException] = []

            def trainer(index: int) -> None:
                fs = fsspec.filesystem("o41", api_url=emu.api_url, api_key=emu.key,
                                       place="aws/us-east-1", holder=f"box-{index}",
                                       skip_instance_cache=True)
                try:
                    for step in range(1, STEPS + 1):
                        if step == OUTAGE_AT:
                            at_outage.wait()
                            door_shut.wait()
                        with fs.transaction:
                            for name, data in files_of(index, step).items():
                                fs.pipe_file(
                                    f"o41://{artifacts[index]}/{step_name(step)}/{name}", data)
                except BaseException as exc:  # noqa: BLE001 - the test reports it below
                    errors.append(exc)
                    at_outage.abort()

            threads = [threading.Thread(target=trainer, args=(i,)) for i in range(2)]
            for t in threads:
                t.start()
            at_outage.wait()
            door.shut()
            door_shut.set()
            # Storage stays gone until a save has been answered 503, then comes back.
            met = answered.wait(timeout=600)
            door.open()
            for t in threads:
                t.join(timeout=900)
            assert not any(t.is_alive() for t in threads), "a save never returned"
            assert errors == [], errors
            assert met, "no save met the outage"
            assert 500 not in statuses, statuses

            reader: O41FileSystem = fsspec.filesystem(
                "o41", api_url=emu.api_url, api_key=emu.key, place="aws/us-east-1",
                skip_instance_cache=True)
            for index, artifact in enumerate(artifacts):
                listed = sorted(p.rsplit("/", 1)[-1] for p in reader.ls(f"o41://{artifact}",
                                                                          detail=False))
                assert [v for v in listed if v.startswith("step-")] == [
                    step_name(s) for s in range(1, STEPS + 1)]
                for step in range(1, STEPS + 1):
                    for name, data in files_of(index, step).items():
                        got = reader.cat_file(f"o41://{artifact}/{step_name(step)}/{name}")
                        assert got == data, (artifact, step, name)
