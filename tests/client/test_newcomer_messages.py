"""What a newcomer reads when something is off: each message pinned word for word.

Each test names the mistake, checks the exact text a user sees, and that the text says what
to do next (issue 14's list: a busy port, the wrong port, the wrong key, a resume typo, a bad
name, the fallback warning, the CLI's one-line errors).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import o41
from emulator.core.locations import Place
from emulator.settings.config import Settings as EmulatorSettings
from o41.cli import main as o41_main
from o41.config import holder_from_env, redact_key, same_task
from o41.errors import ExitCode
from tests.support.deadlines import HANG_GUARD

REPO = Path(__file__).resolve().parents[2]


def closed_port() -> int:
    """A port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def run_o41(monkeypatch, capsys, url: str, key: str, *argv: str) -> tuple[int, str]:
    """The `o41` command in-process, as a shell runs it: exit code and stderr."""
    monkeypatch.setenv("O41_ARTIFACTS_API_URL", url)
    monkeypatch.setenv("O41_ARTIFACTS_API_KEY", key)
    with pytest.raises(SystemExit) as exit_info:
        o41_main(list(argv))
    return int(exit_info.value.code), capsys.readouterr().err


@pytest.fixture(scope="module")
def served(tmp_path_factory) -> Iterator[str]:
    from emulator.run.served import ServedEmulator

    emu = ServedEmulator("--data-dir", str(tmp_path_factory.mktemp("msg") / "data"))
    emu.start()
    yield emu.url
    emu.stop()


# -- 7: serve on a busy port --------------------------------------------------------------

def test_serve_on_a_busy_port_says_so_in_one_line_and_names_the_way_out(tmp_path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        done = subprocess.run(
            [sys.executable, "-m", "emulator", "serve", "--port", str(port), "--data-dir",
             str(tmp_path / "data")], capture_output=True, text=True, timeout=HANG_GUARD)
    assert done.returncode == 1
    assert done.stderr == (f"Error: port {port} on 127.0.0.1 is already in use (another "
                           "emulator?): pick another with --port PORT, or --port 0 for any "
                           "free port\n")


# -- 8, 11: the client at the wrong port ----------------------------------------------------

def test_client_at_a_closed_port_names_the_url_and_asks_if_the_emulator_runs(
        monkeypatch, capsys) -> None:
    waits: list[float] = []
    monkeypatch.setattr("o41.transport.retry.sleep", waits.append)  # a retry would wait first
    url = f"http://127.0.0.1:{closed_port()}"
    code, err = run_o41(monkeypatch, capsys, url, "ak_local", "ls", "o41://experiments/x")
    assert code == ExitCode.TRANSFER
    assert waits == []  # refused: nothing listens there, so one try and no retry
    assert err == (f"o41: transport_error: cannot reach the o41 Artifacts API at {url}/api/v1 "
                   "(connection refused): is the emulator running there? Start it with "
                   "`o41-emulator serve`, or point O41_ARTIFACTS_API_URL at the right URL\n")


# -- 9: the wrong key, the same words from every command ----------------------------------

@pytest.mark.parametrize("key", ["ak_wrong", "ak_0123456789abcdef0123456789abcdef"])
def test_wrong_key_gives_one_masked_message_from_ls_cp_and_usage(
        served, monkeypatch, capsys, tmp_path, key) -> None:
    (tmp_path / "ckpt").mkdir()
    (tmp_path / "ckpt" / "model.pt").write_bytes(b"w")
    masked = redact_key(key)
    expected = (f"o41: unauthenticated: the API key {masked} is not known to {served}/api/v1 "
                "(check O41_ARTIFACTS_API_KEY): unknown API key\n")
    for argv in (["ls", "o41://experiments/x"], ["usage"],
                 ["cp", str(tmp_path / "ckpt"), "o41://experiments/x/step-00000001"]):
        code, err = run_o41(monkeypatch, capsys, served, key, *argv)
        assert (code, err) == (ExitCode.AUTH, expected), argv
        assert key not in err


@pytest.mark.parametrize("length", range(0, 41))
def test_keys_of_every_length_are_masked(length: int) -> None:
    key = ("ak_" + "x7" * 30)[:length]
    shown = redact_key(key)
    assert shown.endswith("…") or "…" in shown
    assert shown.replace("…", "") != key or key == ""
    visible = len(shown) - 1
    assert visible <= (8 if length >= 24 else min(3, length // 2))


# -- 10: a resume typo ----------------------------------------------------------------------

def test_resume_typo_says_what_is_allowed_and_suggests_latest() -> None:
    with pytest.raises(o41.ConfigError) as err:
        o41.open("o41://experiments/run-1", resume="lastest")
    assert str(err.value) == (
        "resume='lastest' is not allowed: resume must be \"latest\", None or an o41:// "
        "checkpoint (o41://project/name/step-XXXXXXXX). Did you mean \"latest\"?")


def test_resume_nonsense_says_what_is_allowed_without_a_guess() -> None:
    with pytest.raises(o41.ConfigError) as err:
        o41.open("o41://experiments/run-1", resume="yes")
    assert str(err.value).startswith("resume='yes' is not allowed: resume must be \"latest\"")
    assert "Did you mean" not in str(err.value)


# -- 11, 12: one-line CLI errors, and the allowed characters of a name ----------------------

def test_bad_name_lists_the_allowed_characters_as_a_coded_cli_line(monkeypatch, capsys) -> None:
    code, err = run_o41(monkeypatch, capsys, "http://127.0.0.1:9", "ak_local", "ls",
                        "o41://Exp!/x")
    assert code == ExitCode.INVALID
    assert err == ("o41: config_error: 'o41://Exp!/x': 'Exp!' is not a valid project or name: "
                   "use letters, digits, '.', '_' and '-', at most 128 characters, starting "
                   "with a letter or digit\n")


def test_every_client_error_has_a_snake_case_code_for_the_cli_line() -> None:
    classes = [c for c in vars(o41.errors).values()
               if isinstance(c, type) and issubclass(c, o41.O41Error)]
    assert len(classes) >= 16
    for cls in classes:
        assert cls.code.islower() and " " not in cls.code, cls
    assert "ConfigError" not in o41.ConfigError("x").code


# -- 13: the fallback warning ---------------------------------------------------------------

def test_fallback_warnings_say_why_where_and_what_it_costs() -> None:
    geo = EmulatorSettings(data_dir=REPO).geography()
    assert geo.place_for(None).warning == (
        "the open gave no place: checkpoints go to the fallback location aws/us-east-1, "
        "billed as cross-cloud transfer; give the box's place to write near it")
    assert geo.place_for(Place("lambda", "us-west-1")).warning == (
        "no location in lambda (the box is at lambda/us-west-1): checkpoints go to the "
        "fallback location aws/us-east-1, billed as cross-cloud transfer")
    assert geo.place_for(Place("gcp", "us-central1")).warning == (
        "no location in gcp/us-central1: checkpoints go to gcp's default location "
        "gcp/europe-west4, billed as inter-region transfer")


# -- 18: boxes of one task are told apart, and still seen as one task -----------------------

def test_holder_names_the_cluster_yet_relaunches_are_the_same_task() -> None:
    env = {"SKYPILOT_TASK_ID": "sky-1", "SKYPILOT_NODE_RANK": "0",
           "SKYPILOT_CLUSTER_INFO": '{"cluster_name": "replay-b", "cloud": "GCP", '
                                    '"region": "europe-west4"}'}
    assert holder_from_env(env) == "sky-1/rank-0@replay-b"
    assert same_task("sky-1/rank-0@replay-a", "sky-1/rank-0@replay-b")
    assert not same_task("sky-1/rank-0@replay-a", "sky-2/rank-0@replay-a")
    assert holder_from_env({**env, "SKYPILOT_CLUSTER_INFO": "not json"}) == "sky-1/rank-0"


# -- 6: the README's client snippet, run as shown, twice, on a new artifact -----------------

def readme_client_snippet() -> str:
    text = (REPO / "README.md").read_text()
    blocks = [b.split("```", 1)[0] for b in text.split("```python\n")[1:]]
    return next(b for b in blocks if "o41.open(" in b)


def test_readme_client_snippet_runs_twice_on_a_new_artifact(served, tmp_path,
                                                            monkeypatch) -> None:
    name = f"experiments/new-{os.getpid()}-{tmp_path.name[-6:]}"
    code = readme_client_snippet().replace("experiments/run-1234", name)
    assert name in code
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("O41_ARTIFACTS_API_URL", served)
    monkeypatch.setenv("O41_ARTIFACTS_API_KEY", "ak_local")
    for _ in range(2):
        exec(compile(code, "README.md", "exec"), {})  # noqa: S102 - the README's own code
    api = o41.ApiClient(f"{served}/api/v1", "ak_local")
    assert [v["version"] for v in api.list_versions(name)] == ["step-00000100", "step-00000200"]


# -- 3: the README says the conformance line needs a key ------------------------------------

def test_readme_conformance_line_says_it_needs_a_key() -> None:
    section = (REPO / "README.md").read_text().split("## Checking an implementation", 1)[1]
    section = section.split("\n## ", 1)[0]
    assert "O41_ARTIFACTS_API_KEY" in section and "--api-key" in section
    assert "export O41_ARTIFACTS_API_KEY=ak_local" in section
