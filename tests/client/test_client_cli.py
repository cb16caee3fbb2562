"""The ``o41`` command: ls, cp both ways, usage, one-line errors and distinct exit codes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

import o41
from o41 import ExitCode, checkpoint
from o41.cli import main
from o41.local import LocalFile
from tests.support.deadlines import HANG_GUARD

if TYPE_CHECKING:
    from tests.support.client_fixtures import Emulator

pytest_plugins = ["tests.support.client_fixtures"]
REPO = Path(__file__).resolve().parents[2]


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as info:
        main(list(argv))
    out, err = capsys.readouterr()
    return int(info.value.code or 0), out, err


@pytest.fixture
def ckpt_dir(tmp_path: Path) -> Path:
    (tmp_path / "src" / "sub").mkdir(parents=True)
    (tmp_path / "src" / "state.json").write_text('{"step": 100}')
    (tmp_path / "src" / "sub" / "w.bin").write_bytes(os.urandom(200_000))
    return tmp_path / "src"


def test_cli_cp_up_ls_cp_down_roundtrip(o41_env: Emulator, o41_location: str, ckpt_dir: Path,
                                        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "cp", str(ckpt_dir), f"{o41_location}/step-00000100")
    assert code == ExitCode.OK and "step-00000100" in out
    code, out, _ = run_cli(capsys, "ls", o41_location)
    assert code == 0 and "step-00000100" in out and "VERSION" in out
    code, out, _ = run_cli(capsys, "ls", f"{o41_location}/latest")
    assert code == 0 and "sub/w.bin" in out
    code, out, _ = run_cli(capsys, "cp", f"{o41_location}/latest", str(tmp_path / "dst"))
    assert code == 0 and "step-00000100" in out
    for name in ("state.json", "sub/w.bin"):
        assert (tmp_path / "dst" / name).read_bytes() == (ckpt_dir / name).read_bytes()


def test_cli_usage_prints_routes_and_total(o41_env: Emulator, o41_location: str, ckpt_dir: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    run_cli(capsys, "cp", str(ckpt_dir), f"{o41_location}/step-00000001")
    code, out, _ = run_cli(capsys, "usage", o41_location)
    assert code == 0 and "ROUTE" in out and "total $" in out
    code, out, _ = run_cli(capsys, "usage", "--json")
    assert code == 0 and '"routes"' in out


def test_cli_missing_artifact_exit_not_found(o41_env: Emulator, o41_location: str,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, "ls", f"{o41_location}/latest")
    assert code == ExitCode.NOT_FOUND and err.startswith("o41: not_found: ")
    assert err.count("\n") == 1


def test_cli_step_not_after_latest_exit_conflict(o41_env: Emulator, o41_location: str,
                                                 ckpt_dir: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    run_cli(capsys, "cp", str(ckpt_dir), f"{o41_location}/step-00000100")
    code, _, err = run_cli(capsys, "cp", str(ckpt_dir), f"{o41_location}/step-00000050")
    assert code == ExitCode.CONFLICT and "not_after_latest" in err


def test_cli_unknown_key_exit_auth(o41_env: Emulator, o41_location: str,
                                   monkeypatch: pytest.MonkeyPatch,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("O41_ARTIFACTS_API_KEY", "ak_unknown")
    code, _, err = run_cli(capsys, "ls", o41_location)
    assert code == ExitCode.AUTH and err.startswith("o41: unauthenticated: ")


def test_cli_fenced_upload_exit_fenced_one_line(o41_env: Emulator, o41_location: str,
                                                ckpt_dir: Path, monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    real_upload = checkpoint.upload_hashed

    def upload_after_another_box_opened(*args: Any, **kwargs: Any) -> list[LocalFile]:
        o41.open(o41_location, resume="latest", holder="box-that-fenced")
        return real_upload(*args, **kwargs)

    monkeypatch.setattr(checkpoint, "upload_hashed", upload_after_another_box_opened)
    code, _, err = run_cli(capsys, "cp", str(ckpt_dir), f"{o41_location}/step-00000007")
    assert code == ExitCode.FENCED
    assert err.startswith("o41: fenced: ") and "box-that-fenced" in err
    assert err.count("\n") == 1


def test_cli_version_prints_the_clients_version(capsys: pytest.CaptureFixture[str]) -> None:
    from importlib.metadata import version

    code, out, _ = run_cli(capsys, "--version")
    assert code == ExitCode.OK and out == f"o41 {version('o41-artifacts-emulator')}\n"


def test_cli_cp_of_one_file_says_1_file(o41_env: Emulator, o41_location: str, tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "one").mkdir()
    (tmp_path / "one" / "model.pt").write_bytes(b"w" * 10)
    code, out, _ = run_cli(capsys, "cp", str(tmp_path / "one"), f"{o41_location}/step-1")
    assert code == ExitCode.OK and "(1 file, 10 B)" in out, out
    code, out, _ = run_cli(capsys, "cp", f"{o41_location}/latest", str(tmp_path / "back"))
    assert code == ExitCode.OK and "(1 file, 10 B)" in out, out


def test_cli_both_local_is_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(capsys, "cp", "a", "b")
    assert code == ExitCode.USAGE and "o41://" in err


def test_cli_process_without_url_exit_invalid_one_line() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("O41_")}
    proc = subprocess.run([sys.executable, "-m", "o41", "ls", "o41://a/b"], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=HANG_GUARD)
    assert proc.returncode == ExitCode.INVALID
    assert proc.stderr.startswith("o41: config_error: O41_ARTIFACTS_API_URL is not set")
    assert proc.stderr.count("\n") == 1
