"""Beyond loopback means an admin key, or an explicit option accepting the risk (issue 20).

Nothing here listens beyond 127.0.0.1: the refusal comes before the bind, and the accepted
case is shown by reaching the bind (a port this test holds on loopback, so it fails there).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import click
import pytest

from emulator.run.cli import exposure
from emulator.settings.config import Settings
from tests.support.deadlines import HANG_GUARD


def serve(tmp_path: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "emulator", "serve", "--data-dir", str(tmp_path / "data"),
         *args], env={**os.environ, **(env or {})}, capture_output=True, text=True,
        timeout=HANG_GUARD, stdin=subprocess.DEVNULL)


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.0.2.10", "box.example"])
def test_serving_beyond_loopback_without_an_admin_key_is_refused_in_one_line(tmp_path, host):
    done = serve(tmp_path, "--host", host, "--port", "0")
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"Error: --host {host} reaches beyond this machine")
    assert "--admin-key" in lines[0] and "--allow-unauthenticated-admin" in lines[0]
    assert not done.stdout  # no URL printed: it never listened


@pytest.mark.parametrize("args, env", [
    (["--allow-unauthenticated-admin"], {}),
    ([], {"O41_EMULATOR_SERVE_ADMIN_KEY": "ak_admin_secret"}),
    ([], {"O41_EMULATOR_SERVE_ALLOW_UNAUTHENTICATED_ADMIN": "1"}),
])
def test_an_admin_key_or_the_explicit_option_lets_it_go_on_to_listen(tmp_path, args, env):
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        # 0.0.0.0:port cannot be had while 127.0.0.1:port listens: the bind itself fails.
        done = serve(tmp_path, "--host", "0.0.0.0", "--port", str(port), *args, env=env)
    assert done.returncode == 1
    assert f"port {port} on 0.0.0.0 is already in use" in done.stderr
    assert "reaches beyond this machine" not in done.stderr


def test_loopback_hosts_need_nothing_and_a_named_address_is_admitted_as_a_host(tmp_path):
    plain = Settings(data_dir=tmp_path)
    for host in ("127.0.0.1", "localhost", "::1", "127.0.0.2"):
        assert exposure(host, plain, open_admin=False) is plain
    keyed = Settings(data_dir=tmp_path, admin_key="ak_admin")
    assert exposure("10.1.2.3", keyed, open_admin=False).allowed_hosts == ("10.1.2.3",)
    assert exposure("0.0.0.0", keyed, open_admin=False).allowed_hosts == ()
    with pytest.raises(click.ClickException, match="--allow-unauthenticated-admin"):
        exposure("10.1.2.3", plain, open_admin=False)


def test_serve_on_a_busy_port_writes_no_data_dir_and_no_database(tmp_path):
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        done = serve(tmp_path, "--port", str(port))
        tmp = tmp_path / "tmp"
        tmp.mkdir()
        temporary = subprocess.run(  # no --data-dir: a temporary one would be made
            [sys.executable, "-m", "emulator", "serve", "--port", str(port)],
            env={**os.environ, "TMPDIR": str(tmp)}, capture_output=True, text=True,
            timeout=HANG_GUARD, stdin=subprocess.DEVNULL)
    assert done.returncode == 1
    assert f"port {port} on 127.0.0.1 is already in use" in done.stderr
    assert not (tmp_path / "data").exists()
    assert temporary.returncode == 1 and "already in use" in temporary.stderr
    assert list(tmp.iterdir()) == []
