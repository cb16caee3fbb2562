"""The README's GitHub Actions job, run as written: its steps' shell, with its environment,
in a fresh directory standing for the user's checkout. It passes: the emulator starts, the
conformance suite passes with every clause tested, the log step prints.

Two kinds of step do not run here, each for a reason: the installs (``pip install`` of the
checkout; this environment already has the project installed, editable) and the user's own
``pytest tests`` (there is no user project). The port 8041 of the job is replaced by a free
one, so that the test never collides with the docs' examples, which hold 8041.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conformance.test_conformance_options import HAS_EMULATOR, REPO

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not HAS_EMULATOR, reason="o41-emulator is not installed (pip install -e .)"),
]

def _not_run(script: str) -> bool:
    """The installs, and the user's own tests (see the module's docstring)."""
    return "pip install" in script or script.strip() == "pytest tests"


def _job() -> dict[str, Any]:
    text = (REPO / "README.md").read_text()
    section = text.split("## In GitHub Actions", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```yaml\n(.*?)```", section, re.DOTALL)
    assert block, "the README's GitHub Actions section has no yaml block"
    jobs = yaml.safe_load(block.group(1))["jobs"]
    assert len(jobs) == 1
    return next(iter(jobs.values()))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_readme_job_steps_pass_as_written(tmp_path: Path) -> None:
    job = _job()
    port = str(_free_port())
    runner_temp, checkout = tmp_path / "runner", tmp_path / "checkout"
    runner_temp.mkdir()
    checkout.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("O41_")}
    env.update({k: str(v).replace("8041", port) for k, v in job["env"].items()})
    env.update(RUNNER_TEMP=str(runner_temp), PYTHONDONTWRITEBYTECODE="1",
               PATH=os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")]))
    steps = [s for s in job["steps"] if "run" in s]
    ran: list[str] = []
    groups: list[int] = []
    try:
        for step in steps:
            script = step["run"].replace("8041", port)
            if _not_run(script):
                continue
            # Each step is its own process group, as the runner's: the emulator the start
            # step leaves running is stopped with its group when the job ends.
            proc = subprocess.Popen(["bash", "-e", "-c", script], cwd=checkout, env=env,
                                    stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                    stderr=subprocess.STDOUT, text=True,
                                    start_new_session=True)
            groups.append(proc.pid)
            out, _ = proc.communicate(timeout=1800)
            assert proc.returncode == 0, f"step {step['name']!r} failed:\n{out[-4000:]}"
            ran.append(step["name"])
            if "--pyargs conformance" in script:
                assert "base and optional capabilities" in out and "NOT TESTED" not in out, (
                    out[-4000:])
                assert re.search(r"^base\s+\d+\s+0\s+\d+\s+PASS", out, re.MULTILINE), out[-4000:]
    finally:
        for group in groups:
            try:
                os.killpg(group, signal.SIGTERM)
            except ProcessLookupError:
                pass
    assert len(ran) == 3, ran  # start the emulator, the conformance suite, the log
    assert (runner_temp / "conformance.html").exists()
