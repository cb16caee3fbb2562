"""The fast tier runs on several processes, a file to each; a run that names a file, and the
slow tier, stay in pytest's own process (tests/support/parallel.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.deadlines import HANG_GUARD

ROOT = Path(__file__).resolve().parent.parent

PROJECT = {
    "pyproject.toml": '[tool.pytest.ini_options]\ntestpaths = ["checks"]\n'
                      'addopts = "-p no:cacheprovider"\n'
                      'markers = ["slow: the slow tier"]\n',
    "conftest.py": 'pytest_plugins = ["tests.support.parallel"]\n\n\n'
                   "def pytest_addoption(parser):\n"
                   '    parser.addoption("--runslow", action="store_true", default=False)\n'
                   # a document's examples, as Sybil collects them: an item per example
                   + """
import json, os, pathlib, pytest

class Example(pytest.Item):
    def runtest(self):
        out = pathlib.Path(os.environ["WHERE_DIR"]) / f"{self.path.stem}-{self.name}"
        out.write_text(json.dumps({"worker": os.environ.get("PYTEST_XDIST_WORKER"),
                                   "pid": os.getpid()}))

class Document(pytest.File):
    def collect(self):
        for line in self.path.read_text().split():
            yield Example.from_parent(self, name=line)

def pytest_collect_file(file_path, parent):
    if file_path.suffix == ".md":
        return Document.from_parent(parent, path=file_path)
""",
}
RECORD = '''import json, os, pathlib

def _where(name):
    out = pathlib.Path(os.environ["WHERE_DIR"]) / name
    out.write_text(json.dumps({"worker": os.environ.get("PYTEST_XDIST_WORKER"),
                               "pid": os.getpid()}))

def test_{f}_one():
    _where("{f}-one")

def test_{f}_two():
    _where("{f}-two")
'''


def _project(tmp_path: Path) -> Path:
    for name, text in PROJECT.items():
        (tmp_path / name).write_text(text)
    (tmp_path / "checks").mkdir()
    for f in ("a", "b", "c"):
        (tmp_path / "checks" / f"test_{f}.py").write_text(RECORD.replace("{f}", f))
    for doc in ("README", "guide"):
        (tmp_path / "checks" / f"{doc}.md").write_text("one two")
    return tmp_path


def _run(project: Path, *args: str, processes: str = "2") -> tuple[subprocess.CompletedProcess,
                                                                     dict[str, dict]]:
    where = project / f"where-{len(list(project.glob('where-*')))}"
    where.mkdir()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "WHERE_DIR": str(where),
           "O41_TEST_PROCESSES": processes}
    # this test may itself run in a worker of a parallel tier: its variables are not the run's
    for name in [n for n in env if n.startswith(("PYTEST_XDIST_", "PYTEST_ADDOPTS"))]:
        del env[name]
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", *args], cwd=project, env=env,
                          capture_output=True, text=True, timeout=HANG_GUARD)
    seen = {p.name: json.loads(p.read_text()) for p in where.iterdir()}
    return done, seen


def test_plain_run_spreads_files_over_processes_keeping_each_file_and_the_docs_in_one(
        tmp_path):
    done, seen = _run(_project(tmp_path))
    assert done.returncode == 0, done.stdout + done.stderr
    assert len(seen) == 10
    workers = {name: s["worker"] for name, s in seen.items()}
    assert set(workers.values()) <= {"gw0", "gw1"} and None not in workers.values()
    for f in ("a", "b", "c"):
        assert workers[f"{f}-one"] == workers[f"{f}-two"], workers
    # every example of every document in one process: they share the docs' port
    assert len({workers[f"{d}-{n}"] for d in ("README", "guide") for n in ("one", "two")}) == 1
    assert len({s["pid"] for s in seen.values()}) == 2


@pytest.mark.parametrize("args", [("checks/test_a.py",), ("-m", "slow or not slow"),
                                  ("--runslow",), ("-n", "0")])
def test_named_files_slow_tier_and_n0_run_in_pytests_own_process(tmp_path, args):
    done, seen = _run(_project(tmp_path), *args)
    assert done.returncode == 0, done.stdout + done.stderr
    assert seen and {s["worker"] for s in seen.values()} == {None}
    assert len({s["pid"] for s in seen.values()}) == 1


def test_zero_processes_runs_in_pytests_own_process_and_a_word_is_a_usage_error(tmp_path):
    project = _project(tmp_path)
    done, seen = _run(project, processes="0")
    assert done.returncode == 0 and {s["worker"] for s in seen.values()} == {None}
    done, seen = _run(project, processes="two")
    assert done.returncode == 4 and not seen
    assert "O41_TEST_PROCESSES='two'" in done.stderr
