"""The conformance suite as a user runs it: targets that cannot be judged, keys handed to it
for a URL target, and a package that leaves other projects' pytest runs alone.

Every test runs pytest in a subprocess, as a user would; none needs network beyond
127.0.0.1.
"""

from __future__ import annotations

import http.server
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conformance.activate import PACKAGE_DIR, runs_suite
from conformance.spawn import SpawnedEmulator

REPO = Path(__file__).resolve().parents[2]
HAS_EMULATOR = bool(
    Path(sys.executable).with_name("o41-emulator").exists() or shutil.which("o41-emulator")
)


def pytest_run(cwd: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    env.pop("O41_ARTIFACTS_API_KEY", None)
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:schemathesis"]
    return subprocess.run(
        [*cmd, *args], cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env
    )


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# --- targets that cannot be judged ------------------------------------------------------


def _judged_nothing(report: dict[str, Any]) -> None:
    assert report["summary"] == {"passed": 0, "failed": 0, "skipped": 0, "error": 0}
    assert {r["status"] for r in report["rules"].values()} == {"----"}


def test_unreachable_target_gives_one_error_line_before_any_test(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{closed_port()}"
    report = tmp_path / "r.json"
    proc = pytest_run(REPO, "conformance", "--target", url, "--api-key", "k", "-q",
                      "--conformance-report", str(report))
    out = proc.stdout + proc.stderr
    errors = [ln for ln in out.splitlines() if "o41 conformance:" in ln]
    assert proc.returncode == 3, out
    assert len(errors) == 1 and url in errors[0] and "unreachable" in errors[0], out
    assert "Connection refused" in errors[0] and "tried GET" in errors[0]
    assert "Traceback" not in out and "FAILED" not in out
    # A refused connection is told at once: a deadline waited out reads "did not answer
    # within" (the probe's own test, below), and the wall clock of a shared machine is not
    # the suite's to assert.
    assert "did not answer" not in out, out
    _judged_nothing(json.loads(report.read_text()))


class _Html404(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        body = b"<html><body>Not Found</body></html>"
        self.send_response(404)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def html_site() -> Iterator[str]:
    """A web server that is not an o41 API: HTML 404 for everything."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Html404)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_foreign_target_named_not_an_o41_api(tmp_path: Path, html_site: str) -> None:
    report = tmp_path / "r.json"
    proc = pytest_run(REPO, "conformance", "--target", html_site, "--api-key", "k", "-q",
                      "--conformance-report", str(report))
    out = proc.stdout + proc.stderr
    errors = [ln for ln in out.splitlines() if "o41 conformance:" in ln]
    assert proc.returncode == 3, out
    assert len(errors) == 1 and "is not an o41 Artifacts API" in errors[0], out
    assert "404 text/html" in errors[0] and html_site in errors[0]
    _judged_nothing(json.loads(report.read_text()))


def test_emulator_that_does_not_start_gives_one_error_line(tmp_path: Path) -> None:
    proc = pytest_run(REPO, "conformance", "--target", "spawn", "-q",
                      "--emulator-command", f"{sys.executable} -c 'raise SystemExit(\"boom\")'")
    out = proc.stdout + proc.stderr
    errors = [ln for ln in out.splitlines() if "o41 conformance:" in ln]
    assert proc.returncode == 3, out
    assert len(errors) == 1 and "--target spawn: emulator did not come up" in errors[0], out
    assert "boom" in errors[0] and "Traceback" not in out


def test_target_url_without_key_is_a_usage_error(tmp_path: Path) -> None:
    proc = pytest_run(REPO, "conformance", "--target", "http://127.0.0.1:1", "-q")
    assert proc.returncode == 4
    assert "--target URL needs --api-key" in proc.stdout + proc.stderr


# --- every key scope on a URL target ----------------------------------------------------

KEYS_TOML = """
[[keys]]
key = "ak_reader"
scopes = [{ prefix = "", access = "read" }]

[[keys]]
key = "ak_scoped"
scopes = [
  { prefix = "scoped-proj/", access = "write" },
  { prefix = "shared-proj/", access = "read" },
]
"""
KEY_TESTS = "scoped_key or scoped_read or read_key"


@pytest.fixture(scope="module")
def served_emulator(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SpawnedEmulator]:
    """Our emulator started by hand, as an implementer starts theirs, with its own keys."""
    if not HAS_EMULATOR:
        pytest.skip("o41-emulator is not installed (pip install -e .)")
    proc = SpawnedEmulator(tmp_path_factory.mktemp("served"), config=KEYS_TOML)
    proc.start()
    try:
        yield proc
    finally:
        proc.stop()


def _report(tmp: Path, url: str, key: str, *extra: str) -> tuple[int, dict[str, Any], str]:
    path = tmp / "r.json"
    proc = pytest_run(REPO, "conformance", "--target", url, "--api-key", key, "-q",
                      "-m", KEY_TESTS, "--conformance-report", str(path), *extra)
    data = json.loads(path.read_text()) if path.exists() else {}
    return proc.returncode, data, (proc.stdout + proc.stderr)[-3000:]


def test_key_scope_tests_run_against_url_target(
    tmp_path: Path, served_emulator: SpawnedEmulator
) -> None:
    code, report, out = _report(
        tmp_path, served_emulator.url, served_emulator.key or "ak_local",
        "--read-key", "ak_reader", "--scoped-key", "ak_scoped=scoped-proj/",
        "--scoped-read-prefix", "shared-proj/",
    )
    assert code == 0, out
    outcomes = {t["nodeid"].split("::")[-1]: t["outcome"] for t in report["tests"]}
    assert len(outcomes) >= 6 and set(outcomes.values()) == {"passed"}, outcomes
    assert report["keys"] == {
        "read_key": True, "scoped_key": "scoped-proj/", "scoped_read_prefix": "shared-proj/"
    }
    for group in ("read_key", "scoped_key", "scoped_read"):
        assert report["verdict"][group] == "pass"


def test_key_scope_tests_skip_naming_the_option(
    tmp_path: Path, served_emulator: SpawnedEmulator
) -> None:
    code, report, out = _report(tmp_path, served_emulator.url, served_emulator.key or "ak_local")
    assert code == 0, out
    skipped = {t["nodeid"]: t["message"] for t in report["tests"]}
    assert skipped and all(t["outcome"] == "skipped" for t in report["tests"])
    for nodeid, why in skipped.items():
        assert any(opt in why for opt in ("--read-key", "--scoped-key")), (nodeid, why)
    assert report["verdict"]["scoped_key"] == "skip"


def test_scoped_prefix_covering_the_run_is_refused(
    tmp_path: Path, served_emulator: SpawnedEmulator
) -> None:
    code, _, out = _report(
        tmp_path, served_emulator.url, "ak_local", "--prefix", "scoped-proj",
        "--scoped-key", "ak_scoped=scoped-proj/",
    )
    assert code == 4 and "cover the run's own artifacts" in out


# --- a package that never changes another project's pytest run --------------------------

FOREIGN_CONFTEST = '''
def pytest_addoption(parser):
    parser.addoption("--target", default="staging")
    parser.addoption("--rules", default="none")
'''
FOREIGN_TEST = '''
def test_own_target_option(pytestconfig):
    assert pytestconfig.getoption("target") == "prod"
    assert pytestconfig.getoption("rules") == "none"
'''


def test_foreign_project_with_target_option_runs_green(tmp_path: Path) -> None:
    """Installing this project adds nothing to another project's pytest (issue 13)."""
    (tmp_path / "conftest.py").write_text(FOREIGN_CONFTEST)
    (tmp_path / "test_own.py").write_text(FOREIGN_TEST)
    proc = pytest_run(tmp_path, "--target", "prod", "-q")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "1 passed" in proc.stdout
    helptext = pytest_run(tmp_path, "--help").stdout
    assert "--conformance-profile" not in helptext and "--scoped-key" not in helptext


def test_suite_options_come_with_pyargs_from_anywhere(tmp_path: Path) -> None:
    helptext = pytest_run(tmp_path, "--pyargs", "conformance", "--help").stdout
    assert "--conformance-profile" in helptext and "--scoped-key=KEY=PREFIX" in helptext
    proc = pytest_run(tmp_path, "--pyargs", "conformance", "--rules", "NOPE-1", "-q")
    assert proc.returncode == 4 and "unknown rule ids" in proc.stdout + proc.stderr


def _collected(tmp_path: Path, *args: str) -> list[str]:
    proc = pytest_run(tmp_path, "--pyargs", "conformance", "--collect-only", "-q", *args)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return [line for line in proc.stdout.splitlines() if "::" in line]


def test_first_runs_the_clause_tests_ahead_and_the_rest_in_their_order(tmp_path: Path) -> None:
    plain = _collected(tmp_path, "--rules", "FENCE-2")
    clause = _collected(tmp_path, "--rules", "FENCE-2.d")
    ahead = _collected(tmp_path, "--rules", "FENCE-2", "--first", "FENCE-2.d")
    assert clause and len(clause) < len(plain)
    assert sorted(ahead) == sorted(plain)  # the same tests, only in another order
    assert ahead[: len(clause)] == clause
    assert ahead[len(clause):] == [t for t in plain if t not in clause]
    bad = pytest_run(tmp_path, "--pyargs", "conformance", "--first", "FENCE-9", "-q")
    assert bad.returncode == 4 and "--first: unknown rule ids" in bad.stdout + bad.stderr


def test_suite_is_recognised_only_by_its_own_paths(tmp_path: Path) -> None:
    repo = PACKAGE_DIR.parent
    assert runs_suite(["conformance"], False, repo)
    assert runs_suite(["conformance/tests/fence/test_fencing.py"], False, repo)
    assert runs_suite([str(PACKAGE_DIR / "tests" / "open" / "test_opens.py")], False, tmp_path)
    assert runs_suite(["conformance.tests.fence.test_fencing"], True, tmp_path)
    assert runs_suite([], False, PACKAGE_DIR)
    assert not runs_suite([], False, repo)  # `pytest` in the checkout runs tests/
    assert not runs_suite(["tests"], False, repo)
    (tmp_path / "conformance").mkdir()
    assert not runs_suite(["conformance"], False, tmp_path)  # another project's folder
    assert not runs_suite(["spawn", "http://x"], False, tmp_path)
