"""The client retries through transient faults injected by the emulator's chaos API."""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
import requests

import o41
from o41.errors import ServerError, TransportError
from o41.transport import retry
from o41.transport.api import ApiClient

if TYPE_CHECKING:
    from tests.support.client_fixtures import Emulator

pytest_plugins = ["tests.support.client_fixtures"]
ATTEMPTS = 6
REFUSED = 25  # refusals of one call in a row


@pytest.fixture
def chaotic(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Emulator]:
    """An emulator of its own, so its chaos rules touch no other test."""
    from tests.support.client_fixtures import start_emulator, stop_emulator

    emu = start_emulator(tmp_path / "data")
    for name in list(os.environ):
        if name.startswith(("SKYPILOT_", "O41_")):
            monkeypatch.delenv(name)
    monkeypatch.setenv("O41_ARTIFACTS_API_URL", emu.api)
    monkeypatch.setenv("O41_ARTIFACTS_API_KEY", emu.key)
    monkeypatch.setenv("O41_PLACE", "aws/us-east-1")
    yield emu
    stop_emulator(emu)


def chaos(emu: Emulator, rules: list[dict]) -> None:
    requests.post(f"{emu.url}/_emulator/chaos", json={"rules": rules}, timeout=60)


def test_save_and_load_succeed_through_failing_and_cut_calls(chaotic, o41_location, tmp_path):
    data = {"model.bin": os.urandom(3 << 20), "meta.json": b"{}"}
    chaos(chaotic, [
        {"operation": "artifacts/open", "times": 2},
        {"operation": "versions/write", "times": 2},
        {"operation": "data/put", "times": 3},
        {"operation": "versions/commit", "times": 2},
    ])
    run = o41.open(o41_location, resume="latest")
    run.save(100, data)
    chaos(chaotic, [
        {"operation": "artifacts/open", "times": 1},
        {"operation": "data/get", "status": 0, "cut_after_bytes": 70_000, "times": 3},
        {"operation": "data/get", "times": 2},
    ])
    again = o41.open(o41_location, resume="latest")
    assert again.resume_from is not None and again.resume_from.version == "step-00000100"
    again.load(tmp_path / "ckpt")
    for name, content in data.items():
        assert (tmp_path / "ckpt" / name).read_bytes() == content
    chaos(chaotic, [{"operation": "versions/read", "times": 2}])
    assert again.api.read_version(again.artifact)["version"] == "step-00000100"
    left = requests.get(f"{chaotic.url}/_emulator/chaos", timeout=60).json()["rules"]
    assert [rule["times"] for rule in left] == [0] * len(left), left  # every fault was met


def test_commit_whose_reply_was_lost_is_recognised_as_landed(chaotic, o41_location):
    run = o41.open(o41_location, resume="latest")
    run.save(1, {"a": b"first"})
    # The commit lands, then its reply is "lost": the retry meets version_exists for a
    # version of this very epoch, and the client returns it instead of failing.
    api = run.api
    ticket = api.write_version(run.artifact, run.token, "step-00000002",
                               [{"name": "a", "size": 1, "sha256":
                                 "ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb"}])
    requests.put(ticket["files"][0]["url"], data=b"a", timeout=60)
    first = api.commit(run.artifact, run.token, ticket["upload"])
    lost = iter([requests.ConnectionError("connection reset before the reply")])
    real_request = api.session.request

    def flaky_request(method, url, **kwargs):  # noqa: ANN001, ANN003, ANN202
        if url.endswith("/versions/commit"):
            error = next(lost, None)
            if error is not None:
                raise error
        return real_request(method, url, **kwargs)

    api.session.request = flaky_request  # type: ignore[method-assign]
    again = api.commit(run.artifact, run.token, ticket["upload"], version="step-00000002",
                       epoch=run.epoch)
    assert again["version"] == first["version"] and again["epoch"] == run.epoch


def test_persistent_failure_still_surfaces(chaotic, o41_location, monkeypatch):
    monkeypatch.setattr(retry, "POLICY", retry.Policy(tries=6))  # six tries, not minutes
    chaos(chaotic, [{"operation": "artifacts/open", "status": 503, "times": 7}])
    with pytest.raises(ServerError):
        o41.open(o41_location, resume="latest")
    rules = requests.get(f"{chaotic.url}/_emulator/chaos", timeout=60).json()["rules"]
    assert rules[0]["times"] == 1  # six tries, then it surfaced


def test_a_few_seconds_of_503_are_ridden_out(chaotic, o41_location):
    """A database restart behind the service: more failures than six quick tries cover."""
    chaos(chaotic, [{"operation": "artifacts/open", "status": 503, "times": 7}])
    assert o41.open(o41_location, resume="latest").epoch >= 1


class CountingSession(requests.Session):
    """A session that counts the requests it sends (each is one attempt of a call)."""

    def __init__(self) -> None:
        super().__init__()
        self.sent = 0

    def request(self, *args, **kwargs):  # noqa: ANN002, ANN003, ANN201 - requests' signature
        self.sent += 1
        return super().request(*args, **kwargs)


def test_a_refused_connection_is_tried_once_and_names_the_url_and_its_variable(monkeypatch):
    waits: list[float] = []
    monkeypatch.setattr(retry, "sleep", waits.append)
    with socket.socket() as sock:  # bound, then released: nothing listens on the port
        sock.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{sock.getsockname()[1]}/api/v1"
    for call in ("list_versions", "open"):
        session = CountingSession()
        api = ApiClient(url, "ak_local", session=session)
        with pytest.raises(TransportError) as info:
            if call == "open":
                api.open("experiments/x", resume="latest", place=None, holder=None)
            else:
                api.list_versions("experiments/x")
        assert session.sent == 1 and waits == [], call
        message = str(info.value)
        assert "\n" not in message and info.value.code == "transport_error"
        assert f"at {url} (connection refused)" in message
        assert "O41_ARTIFACTS_API_URL" in message


def test_a_connection_cut_without_a_reply_is_still_retried(monkeypatch):
    """A reset (a node restarting, a proxy dropping the connection) is worth the tries."""
    monkeypatch.setattr(retry, "sleep", lambda s: None)
    monkeypatch.setattr(retry, "POLICY", retry.Policy(tries=ATTEMPTS))  # tries, not minutes
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    accepted: list[int] = []

    def cut() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return  # the server socket closed: the test is over
            accepted.append(1)
            conn.recv(65536)  # the request arrives; the reply never does
            conn.close()

    threading.Thread(target=cut, daemon=True).start()
    url = f"http://127.0.0.1:{server.getsockname()[1]}/api/v1"
    try:
        session = CountingSession()
        with pytest.raises(TransportError) as info:
            ApiClient(url, "ak_local", session=session).list_versions("experiments/x")
    finally:
        server.close()
    assert session.sent == ATTEMPTS == len(accepted)
    assert f"at {url} (no connection)" in str(info.value)


def test_a_save_and_a_load_ride_out_many_503s_of_every_call(chaotic, o41_location, tmp_path,
                                                             monkeypatch):
    """More refusals of each call than today's tries (5 of a byte, 20 s of a call) cover;
    the waits are recorded, not slept."""
    monkeypatch.setattr(retry, "sleep", lambda s: None)
    data = {"model.bin": os.urandom(3 << 20), "meta.json": b"{}"}
    chaos(chaotic, [{"operation": op, "status": 503, "times": REFUSED}
                    for op in ("artifacts/open", "versions/write", "data/put",
                               "versions/commit")])
    run = o41.open(o41_location, resume="latest")
    run.save(7, data)
    chaos(chaotic, [{"operation": op, "status": 503, "times": REFUSED}
                    for op in ("artifacts/open", "data/get")])
    again = o41.open(o41_location, resume="latest")
    assert again.resume_from is not None and again.resume_from.version == "step-00000007"
    again.load(tmp_path / "ckpt")
    for name, content in data.items():
        assert (tmp_path / "ckpt" / name).read_bytes() == content
    left = requests.get(f"{chaotic.url}/_emulator/chaos", timeout=60).json()["rules"]
    assert [rule["times"] for rule in left] == [0] * len(left), left  # every refusal was met
    chaos(chaotic, [{"operation": "versions/read", "status": 503, "times": REFUSED}])
    assert again.api.read_version(again.artifact)["version"] == "step-00000007"
