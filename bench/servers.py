"""The processes under test: the emulator, moto's S3 server and a raw loopback sender.

Each runs as its own subprocess (the emulator through the project's one launcher), so none
of them shares the benchmark client's GIL or memory, and each is stopped by its own pid.
Output goes to files, never to pipes that could fill up and stall a server mid-benchmark.
"""

from __future__ import annotations

import hashlib
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import requests

from emulator.run.served import EmulatorDidNotStart, ServedEmulator

REPO = Path(__file__).resolve().parent.parent
KEY = "ak_local"
PLACE = {"cloud": "aws", "region": "us-east-1"}
_READY = re.compile(r"^READY (\d+)$", re.M)

MOTO_MAIN = """
import sys, time
from moto.server import ThreadedMotoServer
server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
server.start()
print("READY", server.get_host_and_port()[1], flush=True)
while True:
    time.sleep(3600)
"""


class ServerError(RuntimeError):
    """A server did not come up; the message carries the tail of its log."""


class Process:
    """A subprocess with its stdout/stderr in files under `workdir`, stopped by pid."""

    def __init__(self, name: str, argv: list[str], workdir: Path, env: dict | None = None):
        workdir.mkdir(parents=True, exist_ok=True)
        self.name = name
        self.out_path = workdir / f"{name}.out"
        self.err_path = workdir / f"{name}.err"
        self._out = open(self.out_path, "wb")
        self._err = open(self.err_path, "wb")
        self.started = time.perf_counter()
        self.proc = subprocess.Popen(
            argv, stdout=self._out, stderr=self._err, stdin=subprocess.DEVNULL, cwd=REPO,
            env={**os.environ, **(env or {})},
        )

    @property
    def pid(self) -> int:
        return self.proc.pid

    def wait_for(self, pattern: re.Pattern, timeout: float = 30.0) -> re.Match:
        """Poll the stdout file until `pattern` matches (the server said where it listens)."""
        deadline = time.perf_counter() + timeout
        while time.perf_counter() < deadline:
            m = pattern.search(self.out_path.read_text(errors="replace"))
            if m:
                return m
            if self.proc.poll() is not None:
                break
            time.sleep(0.002)
        raise ServerError(f"{self.name} did not start: {self.tail()}")

    def tail(self) -> str:
        return self.err_path.read_text(errors="replace")[-2000:]

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._out.close()
        self._err.close()


class Emulator:
    """`o41-emulator serve --port 0` on a data dir (the project's one launcher,
    `emulator.run.served.ServedEmulator`); `url` is ready once healthy."""

    def __init__(self, data_dir: Path, workdir: Path, *extra: str, name: str = "emulator"):
        self.name = name
        self.started = time.perf_counter()
        self.served = ServedEmulator("--data-dir", str(data_dir), *extra)
        self.served.poll = 0.002  # the cold start is a figure: poll finely
        try:
            self.served.start()
        except EmulatorDidNotStart as exc:
            raise ServerError(f"{name} did not start: {exc}") from None
        self.ready_after = time.perf_counter() - self.started
        self.url = self.served.url
        assert self.served.process is not None
        self.pid = self.served.process.pid
        self.api = f"{self.url}/api/v1"
        self.session = requests.Session()
        self.session.headers["Authorization"] = f"Bearer {KEY}"

    def call(self, method: str, op: str, **kw) -> dict:
        r = self.session.request(method, f"{self.api}/{op}", timeout=120, **kw)
        if r.status_code >= 400:
            raise ServerError(f"{op} -> {r.status_code} {r.text[:300]}")
        return r.json()

    def stop(self) -> None:
        # An idle keep-alive connection would hold gunicorn's graceful shutdown for seconds.
        self.session.close()
        self.served.stop()

    def checkpoint(self, artifact: str, step: int, files: dict[str, bytes]) -> None:
        """Open `artifact` (resume latest) and commit one small version through the API."""
        tok = self.call("POST", "artifacts/open", json={
            "artifact": artifact, "resume": "latest", "place": PLACE})["token"]
        listed = [{"name": n, "size": len(b), "sha256": hashlib.sha256(b).hexdigest()}
                  for n, b in files.items()]
        w = self.call("POST", "versions/write", json={
            "artifact": artifact, "token": tok, "version": f"step-{step:08d}", "files": listed})
        for f in w["files"]:
            r = requests.put(f["url"], data=files[f["name"]], timeout=60)
            if r.status_code >= 300:
                raise ServerError(f"PUT -> {r.status_code} {r.text[:300]}")
        self.call("POST", "versions/commit",
                  json={"artifact": artifact, "token": tok, "upload": w["upload"]})


class Moto(Process):
    """moto's threaded S3 server in its own process (the tool a user would otherwise pick)."""

    def __init__(self, workdir: Path):
        # moto spools objects over 5 MB to temporary files: keep them beside the emulator's.
        super().__init__("moto", [sys.executable, "-c", MOTO_MAIN], workdir,
                         env={"AWS_ACCESS_KEY_ID": "bench", "AWS_SECRET_ACCESS_KEY": "bench",
                              "AWS_DEFAULT_REGION": "us-east-1", "TMPDIR": str(workdir)})
        port = int(self.wait_for(_READY).group(1))
        self.url = f"http://127.0.0.1:{port}"
        self.ready_after = wait_healthy(f"{self.url}/moto-api/", self.started)

    def s3(self):
        import boto3
        from botocore.config import Config

        return boto3.client(
            "s3", endpoint_url=self.url, region_name="us-east-1",
            aws_access_key_id="bench", aws_secret_access_key="bench",
            config=Config(signature_version="s3v4"),
        )


def wait_healthy(url: str, since: float, timeout: float = 30.0) -> float:
    """Seconds from `since` until `url` answers 200, polling every 2 ms."""
    deadline = time.perf_counter() + timeout
    with requests.Session() as s:
        while time.perf_counter() < deadline:
            try:
                if s.get(url, timeout=1).status_code == 200:
                    return time.perf_counter() - since
            except requests.RequestException:
                pass  # not listening yet, too busy starting to answer within 1 s, or cut off
            time.sleep(0.002)
    raise ServerError(f"{url} not healthy after {timeout} s")


def tree(pid: int) -> list[int]:
    """`pid` and all its descendants (gunicorn's master and its workers)."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        for task in Path(f"/proc/{p}/task").glob("*"):
            try:
                todo += [int(c) for c in (task / "children").read_text().split()]
            except OSError:
                continue
    return out


def _status_kb(pid: int, field: str) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


class PeakRss:
    """Peak resident memory of a process tree while something runs.

    `start()` resets every process's high-water mark (clear_refs 5); `peak_mb()` sums the
    marks: an upper bound of the tree's peak RSS that no sampling interval can miss (pages
    that gunicorn's workers share with their master count once per process). A thread also
    samples the tree's PSS, which counts shared pages once, for comparison.
    """

    def __init__(self, pid: int, sample_pss: bool = True) -> None:
        self.root, self.sample_pss = pid, sample_pss
        self.peak_pss_mb = 0.0
        self._stop = threading.Event()
        self._sampler: threading.Thread | None = None

    def start(self) -> None:
        for p in tree(self.root):
            try:
                Path(f"/proc/{p}/clear_refs").write_text("5")
            except OSError:
                pass
        if self.sample_pss:  # reading smaps is costly for a big process: moto is not sampled
            self._sampler = threading.Thread(target=self._sample, daemon=True)
            self._sampler.start()

    def _sample(self) -> None:
        while not self._stop.wait(0.05):
            self.peak_pss_mb = max(self.peak_pss_mb, self.pss_mb())

    def peak_mb(self) -> float:
        """Sum of VmHWM since start(); also stops the PSS sampler."""
        self._stop.set()
        if self._sampler is not None:
            self._sampler.join()
        return sum(_status_kb(p, "VmHWM") for p in tree(self.root)) / 1024

    def now_mb(self) -> float:
        return sum(_status_kb(p, "VmRSS") for p in tree(self.root)) / 1024

    def pss_mb(self) -> float:
        total = 0
        for p in tree(self.root):
            try:
                for line in Path(f"/proc/{p}/smaps_rollup").read_text().splitlines():
                    if line.startswith("Pss:"):
                        total += int(line.split()[1])
            except OSError:
                pass
        return total / 1024
