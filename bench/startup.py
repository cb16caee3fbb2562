"""Cold start to healthy, and the conformance suite's wall time against a local emulator."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from .servers import KEY, REPO, Emulator, Moto


def cold_starts(workdir: Path, n: int) -> tuple[float, float]:
    """Median seconds from spawning to a 200 health answer: (emulator, moto)."""
    emu, moto = [], []
    for i in range(n):
        e = Emulator(workdir / f"cold-{i}", workdir, name=f"emulator-cold-{i}")
        emu.append(e.ready_after)
        e.stop()
        m = Moto(workdir)
        moto.append(m.ready_after)
        m.stop()
    return sorted(emu)[n // 2], sorted(moto)[n // 2]


@dataclass
class Suite:
    seconds: float | None  # None: the suite is not there
    summary: str
    ok: bool


READ_KEY = "ak_bench_reader"
#: What `--target spawn` configures too: a read-only key, and URLs short-lived enough for
#: the expiry test to wait them out rather than skip.
CONFIG = f"""url_lifetime = 3
[[keys]]
key = "{READ_KEY}"
scopes = [{{ prefix = "", access = "read" }}]
"""


def conformance(workdir: Path, timeout: float) -> Suite:
    """`pytest conformance --target URL` (default profile) against a fresh emulator."""
    if not (REPO / "conformance").is_dir():
        return Suite(None, "conformance/ is not in this checkout", False)
    config = workdir / "conformance.toml"
    config.write_text(CONFIG)
    emu = Emulator(workdir / "conformance-data", workdir, "--config", str(config),
                   name="emulator-conformance")
    try:
        argv = [sys.executable, "-m", "pytest", "conformance", "--target", emu.url, "-q",
                "--api-key", KEY, "--read-key", READ_KEY]
        t0 = time.perf_counter()
        try:
            done = subprocess.run(argv, cwd=REPO, capture_output=True, text=True,
                                  timeout=timeout, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            return Suite(time.perf_counter() - t0, f"stopped after {timeout:.0f} s", False)
        seconds = time.perf_counter() - t0
    finally:
        emu.stop()
    (workdir / "conformance.log").write_text(done.stdout + done.stderr)
    found = re.findall(r"^=*\s*(\d+ (?:passed|failed|error).*?)\s*=*$", done.stdout, re.M)
    summary = found[-1] if found else done.stdout.strip().splitlines()[-1:] or ["no output"]
    return Suite(seconds, summary if isinstance(summary, str) else summary[0],
                 done.returncode == 0)
