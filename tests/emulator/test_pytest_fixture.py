"""The ``o41_emulator`` fixture as a user project gets it: a project of its own, with only
tests that ask for the fixture, run by a pytest subprocess of this installation."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

USER_TESTS = '''
import os

import fsspec
import requests

from emulator import ThreadedEmulator

NAME = "team/run-1"  # every test uses the same artifact: each starts from an empty emulator


def test_fsspec_writes_and_reads_a_checkpoint(o41_emulator):
    with fsspec.open(f"o41://{NAME}/step-00000001/model.bin", "wb") as f:
        f.write(b"weights of step 1")
    fsspec.get_filesystem_class("o41").clear_instance_cache()  # the commit is done by now
    with fsspec.open(f"o41://{NAME}/model.bin", "rb") as f:
        assert f.read() == b"weights of step 1"


def test_plain_http_opens_that_fence(o41_emulator):
    api = os.environ["O41_ARTIFACTS_API_URL"]
    auth = {"Authorization": "Bearer " + os.environ["O41_ARTIFACTS_API_KEY"]}
    assert api == o41_emulator.api_url and os.environ["O41_PLACE"] == "aws/us-east-1"
    first = requests.post(f"{api}/artifacts/open", headers=auth, timeout=60,
                          json={"artifact": NAME, "resume": "latest"})
    assert first.status_code == 200 and first.json()["epoch"] == 1, first.text
    second = requests.post(f"{api}/artifacts/open", headers=auth, timeout=60,
                           json={"artifact": NAME, "resume": "latest"})
    assert second.json()["epoch"] == 2
    stale = requests.post(f"{api}/versions/write", headers=auth, timeout=60, json={
        "artifact": NAME, "token": first.json()["token"], "version": "step-00000001",
        "files": []})
    assert stale.status_code == 409 and stale.json()["error"]["code"] == "fenced", stale.text


def test_sets_a_chaos_rule(o41_emulator):
    rule = {"operation": "versions/list", "status": 503, "times": 100}
    requests.post(f"{o41_emulator.url}/_emulator/chaos", json={"rules": [rule]},
                  timeout=60).raise_for_status()


def test_the_same_name_is_new_again(o41_emulator):
    listed = requests.get(f"{o41_emulator.api_url}/versions/list", params={"artifact": NAME},
                          headers=o41_emulator.auth, timeout=60)
    assert listed.status_code == 404 and listed.json()["error"]["code"] == "not_found"
    with fsspec.open(f"o41://{NAME}/step-00000001/model.bin", "wb") as f:
        f.write(b"a new run")
    fsspec.get_filesystem_class("o41").clear_instance_cache()
    with fsspec.open(f"o41://{NAME}/model.bin", "rb") as f:
        assert f.read() == b"a new run"


def test_a_threaded_emulator_by_hand(o41_emulator):
    with ThreadedEmulator(url_lifetime=60) as mine:
        assert mine.url.startswith("http://127.0.0.1:") and mine.url != o41_emulator.url
        opened = requests.post(f"{mine.api_url}/artifacts/open", headers=mine.auth,
                               timeout=60, json={"artifact": NAME, "resume": "latest"})
        assert opened.status_code == 200 and opened.json()["epoch"] == 1
        mine.reset()
        gone = requests.get(f"{mine.api_url}/versions/list", params={"artifact": NAME},
                            headers=mine.auth, timeout=60)
        assert gone.status_code == 404
    assert not mine.running


def test_the_environment_is_put_back():
    assert "O41_ARTIFACTS_API_URL" not in os.environ
    assert "O41_PLACE" not in os.environ
'''


REPO = Path(__file__).resolve().parents[2]


def readme_example() -> str:
    """The README's example test file (its one python block that asks for the fixture)."""
    blocks = re.findall(r"```python\n(.*?)```", (REPO / "README.md").read_text(), re.S)
    (found,) = [b for b in blocks if "(o41_emulator)" in b]
    return found


def user_env() -> dict[str, str]:
    """This process's environment without what the project's own tests set (O41_*)."""
    return {k: v for k, v in os.environ.items()
            if not k.startswith(("O41_", "SKYPILOT_", "PYTEST_", "COV_"))}


def run_user_project(tmp_path: Path, tests: str, *args: str) -> subprocess.CompletedProcess:
    project = tmp_path / "user-project"
    project.mkdir(parents=True)
    (project / "test_checkpoints.py").write_text(textwrap.dedent(tests))
    # A rootdir of its own: this checkout's conftest.py and pytest settings stay out.
    (project / "pytest.ini").write_text("[pytest]\n")
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
         "-W", "error", *args],
        cwd=project, env=user_env(), capture_output=True, text=True, timeout=600)


def test_a_user_projects_tests_get_an_empty_emulator_each(tmp_path: Path) -> None:
    run = run_user_project(tmp_path, USER_TESTS)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    assert "6 passed" in run.stdout


def test_the_readmes_example_tests_pass_in_a_user_project(tmp_path: Path) -> None:
    run = run_user_project(tmp_path, readme_example())
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    assert "3 passed" in run.stdout


def test_the_fixture_is_all_a_users_run_gains(tmp_path: Path) -> None:
    """Listed among the fixtures, while the run's options name nothing of the package."""
    run = run_user_project(tmp_path, "def test_nothing():\n    pass\n", "--fixtures")
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    assert "o41_emulator -- " in run.stdout
    helped = run_user_project(tmp_path / "again", "def test_nothing():\n    pass\n", "--help")
    assert "o41" not in helped.stdout.lower(), helped.stdout
