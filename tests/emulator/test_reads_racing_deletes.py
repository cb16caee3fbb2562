"""Every answer that shows a version comes from one consistent state of the database: the
whole version or 404, never a version a delete emptied in between (READ-1, VER-7, FORK-1).

Reads and forks race deletes of the very version they name, in-process on two threads per
trial, on SQLite and (O41_TEST_DATABASE=postgresql) on PostgreSQL.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

import pytest

import emulator.store.versions
from emulator import create_app
from tests.support.backends import ON_POSTGRES, make_settings
from tests.support.emulator_http import AWS, Box, Http, Reply
from tests.support.race_tools import HOLD_SECONDS, Background

FILES = {"a.bin": b"a" * 11, "b.bin": b"b" * 22, "c.bin": b"c" * 33}
WHOLE = [{"name": n, "size": len(d)} for n, d in sorted(FILES.items())]
TRIALS, SLOW_TRIALS = 150, 600


def version(step: int) -> str:
    return f"step-{step:08d}"


def on_test_thread() -> bool:
    """The test's own call, not the one its hook started on another thread."""
    return threading.current_thread() is threading.main_thread()


def make_http(tmp_path: Path, request: pytest.FixtureRequest, **settings) -> Http:
    app = create_app(make_settings(tmp_path, request, **settings))
    return Http("http://localhost", app.test_client())


def filled_box(http: Http, artifact: str, versions: int) -> Box:
    """An artifact with `versions` committed versions of three files each, and one more
    on top, so every one of them may be deleted (the latest never is)."""
    box = Box(http, artifact, AWS)
    assert box.open().status == 200
    for step in range(1, versions + 2):
        assert box.checkpoint(version(step), FILES).status == 200
    return box


def delete(box: Box, step: int) -> Reply:
    return box.http.request("POST", "/api/v1/versions/delete", json={
        "artifact": box.artifact, "token": box.token, "version": version(step)})


def whole(shown: dict) -> bool:
    files = [{"name": f["name"], "size": f["size"]} for f in shown["files"]]
    return files == WHOLE and shown["size"] == sum(len(d) for d in FILES.values())


def race(trials: int, one: Callable[[int], object], other: Callable[[int], object]
         ) -> list[tuple[object, object]]:
    """`one(i)` and `other(i)` on two threads started together, for each trial i."""
    gate = threading.Barrier(2, timeout=HOLD_SECONDS)
    results: dict[int, list[object]] = {i: [None, None] for i in range(1, trials + 1)}

    def run(side: int, fn: Callable[[int], object]) -> None:
        for i in range(1, trials + 1):
            gate.wait()
            results[i][side] = fn(i)

    threads = [Background(run, 0, one), Background(run, 1, other)]
    for t in threads:
        t.start()
    # No deadline on the whole race (a loaded machine takes minutes): each trial is bounded
    # by the gate's timeout, so a side that stops ends the other within it.
    for t in threads:
        t.join()
    for t in threads:
        t.outcome()
    return [(a, b) for a, b in results.values()]


def read_racing_delete(http: Http, artifact: str, trials: int) -> list[str]:
    """What went wrong in `trials` reads of a version racing its delete."""
    box = filled_box(http, artifact, trials)
    wrong = []
    for read, deleted in race(trials, lambda i: box.read(version(i)), lambda i: delete(box, i)):
        assert isinstance(read, Reply) and isinstance(deleted, Reply)
        assert deleted.status == 200, deleted.body
        if read.status == 200 and not whole(read.body):
            wrong.append(f"{read.body['version']}: {read.body['files']}")
        elif read.status != 200 and (read.status, read.code) != (404, "not_found"):
            wrong.append(f"{read.status} {read.body}")
    return wrong


def fork_racing_delete(http: Http, artifact: str, trials: int) -> list[str]:
    """What went wrong in `trials` forks of a version racing its delete."""
    box = filled_box(http, artifact, trials)

    def fork(i: int) -> Reply:
        return Box(http, f"{artifact}-fork{i}", AWS).open(f"o41://{artifact}/{version(i)}")

    wrong = []
    for i, (opened, deleted) in enumerate(race(trials, fork, lambda i: delete(box, i)), 1):
        assert isinstance(opened, Reply) and isinstance(deleted, Reply)
        assert deleted.status == 200, deleted.body
        info = http.request("GET", "/api/v1/artifacts/read",
                            params={"artifact": f"{artifact}-fork{i}"})
        if opened.status == 200:
            if not whole(opened.body["resume_from"]):
                wrong.append(f"fork of {version(i)}: {opened.body['resume_from']['files']}")
            elif info.body["forked_from"] != {"artifact": artifact, "version": version(i)}:
                wrong.append(f"fork of {version(i)} recorded {info.body['forked_from']}")
        elif (opened.status, opened.code) != (404, "not_found"):
            wrong.append(f"{opened.status} {opened.body}")
        elif info.status != 404:  # a refused fork rolled back whole: no target, no record
            wrong.append(f"refused fork of {version(i)} left {info.body}")
    return wrong


def test_a_read_racing_the_delete_of_its_version_is_whole_or_not_found(tmp_path, request,
                                                                         artifact):
    assert read_racing_delete(make_http(tmp_path, request), artifact, TRIALS) == []


def test_a_fork_racing_the_delete_of_its_source_is_whole_or_not_found(tmp_path, request,
                                                                        artifact):
    assert fork_racing_delete(make_http(tmp_path, request), artifact, TRIALS) == []


@pytest.mark.slow
def test_reads_and_forks_racing_deletes_600_times_each_are_never_partial(tmp_path, request,
                                                                        artifact):
    http = make_http(tmp_path, request)
    assert read_racing_delete(http, artifact + "-r", SLOW_TRIALS) == []
    assert fork_racing_delete(http, artifact + "-f", SLOW_TRIALS) == []


def test_a_delete_committed_between_a_reads_statements_is_not_seen_by_it(
        tmp_path, request, artifact, monkeypatch):
    """The worst moment for a read: its version row is read, then the delete commits
    whole, then its files are read. It answers the version as it was, files and all."""
    http = make_http(tmp_path, request)
    box = filled_box(http, artifact, 1)
    files = emulator.store.versions.files
    deleted: list[Reply] = []

    def delete_in_between(conn, name: str, step: int):
        if name == artifact and not deleted and on_test_thread():
            other = Background(delete, box, step)  # another thread, another connection
            other.start()
            deleted.append(other.outcome())
        return files(conn, name, step)

    monkeypatch.setattr(emulator.store.versions, "files", delete_in_between)
    read = box.read(version(1))
    assert deleted[0].status == 200, deleted[0].body
    assert read.status == 200 and whole(read.body), read.body
    assert (box.read(version(1)).status, box.read(version(1)).code) == (404, "not_found")


def test_artifacts_read_shows_a_count_and_a_latest_of_one_moment(tmp_path, request, artifact,
                                                                 monkeypatch):
    """A commit landing between artifacts/read's two statements is seen by both or by
    neither: `versions` counts the versions up to `latest`."""
    http = make_http(tmp_path, request)
    box = filled_box(http, artifact, 1)  # two versions
    latest_step = emulator.store.versions.latest_step
    committed: list[Reply] = []

    def commit_in_between(conn, name: str, **kwargs):
        if name == artifact and not committed and on_test_thread():
            other = Background(box.checkpoint, version(3), FILES)
            other.start()
            committed.append(other.outcome())
        return latest_step(conn, name, **kwargs)

    monkeypatch.setattr(emulator.store.versions, "latest_step", commit_in_between)
    info = http.request("GET", "/api/v1/artifacts/read", params={"artifact": artifact})
    assert committed[0].status == 200, committed[0].body
    assert info.status == 200
    assert (info.body["versions"], info.body["latest"]) == (2, version(2)), info.body


@pytest.mark.skipif(not ON_POSTGRES, reason="SQLite's one write lock serialises an open and "
                    "a delete already; PostgreSQL locks rows")
def test_a_delete_of_a_fork_source_waits_for_the_fork_that_read_it(tmp_path, request,
                                                                   artifact, monkeypatch):
    """A fork that has read its source version holds it: a delete of that version waits
    for the fork to end (here its lock wait is cut: 503), and the fork answers it whole."""
    http = make_http(tmp_path, request, db_lock_timeout=0.5)
    box = filled_box(http, artifact, 1)
    row = emulator.store.versions.row
    deleted: list[Reply] = []

    def delete_in_between(conn, name: str, step: int):
        found = row(conn, name, step)
        if name == artifact and not deleted and on_test_thread():
            other = Background(delete, box, step)
            other.start()
            deleted.append(other.outcome())
        return found

    monkeypatch.setattr(emulator.store.versions, "row", delete_in_between)
    opened = Box(http, artifact + "-fork", AWS).open(f"o41://{artifact}/{version(1)}")
    assert opened.status == 200 and whole(opened.body["resume_from"]), opened.body
    assert (deleted[0].status, deleted[0].code) == (503, "unavailable"), deleted[0].body


def test_a_url_given_while_a_delete_waits_for_its_lock_serves_until_its_expiry(
        tmp_path, request, artifact, monkeypatch):
    """A read answers while a delete of its version waits for the artifact's lock; the
    URL it gave serves until the expiry it claims, though the delete went on to commit."""
    import emulator.store.artifacts
    from emulator.rules.uploads import reclaim_expired_uploads

    app = create_app(make_settings(tmp_path, request, url_lifetime=100))
    http = Http("http://localhost", app.test_client())
    backend = app.extensions["o41"]
    box = filled_box(http, artifact, 1)
    clock = [backend.now()]
    monkeypatch.setattr(backend, "now", lambda: clock[0])
    lock = emulator.store.artifacts.lock
    waiting, go = threading.Event(), threading.Event()

    def held_lock(conn, name: str):
        if threading.current_thread().name == "deleter" and not waiting.is_set():
            waiting.set()  # as if another call held the artifact's row
            assert go.wait(HOLD_SECONDS)
        return lock(conn, name)

    monkeypatch.setattr(emulator.store.artifacts, "lock", held_lock)
    deleter = Background(delete, box, 1, name="deleter")
    deleter.start()
    assert waiting.wait(HOLD_SECONDS)
    clock[0] += 10  # the delete waits ten seconds
    read = box.read(version(1))
    assert read.status == 200 and whole(read.body)
    go.set()
    assert deleter.outcome().status == 200
    urls = [f["url"] for f in read.body["files"]]
    clock[0] += 100 - 1  # a second before the URLs' expiry
    reclaim_expired_uploads(backend)
    got = [http.request("GET", u, key=None) for u in urls]
    assert [r.status for r in got] == [200] * len(FILES)
    assert {f["name"]: r.content for f, r in zip(read.body["files"], got, strict=True)} == FILES
