"""One settings table: the TOML file, `serve`'s options and variables and `create_app` agree
with it, and an unknown name or a mistyped value is an error in each."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import click
import pytest

from emulator import create_app
from emulator.run.cli import serve
from emulator.settings.config import SETTINGS, Settings, load_toml, settings_from
from tests.support.deadlines import HANG_GUARD

DOCS = Path(__file__).resolve().parents[2] / "docs"


def documented_toml() -> str:
    (block,) = re.findall(r"```toml\n(.*?)```", (DOCS / "emulator.md").read_text(), re.S)
    return block


def test_every_file_setting_is_documented_and_the_documented_file_loads(tmp_path):
    block = documented_toml()
    for row in SETTINGS.values():
        if row.toml:
            assert re.search(rf"^(\[\[?)?{row.name}\b", block, re.M), row.name
    path = tmp_path / "emulator.toml"
    path.write_text(block)
    settings = load_toml(Settings(data_dir=tmp_path), path)
    assert settings.url_lifetime == 3600 and settings.public_url.startswith("http://")
    assert [k.key for k in settings.keys] == ["ak_local", "ak_reader"]


def test_serve_options_are_the_tables_cli_rows_with_its_help():
    options = {p.name: p for p in serve.params if isinstance(p, click.Option)}
    for row in SETTINGS.values():
        if row.cli:
            assert row.name in options, row.name
            assert options[row.name].help.lower().startswith(row.help.lower()), row.name
        else:
            assert row.name in ("data_dir", "faults") or row.name not in options


@pytest.mark.parametrize("text,message", [
    ("url_lifetme = 5\n", "unknown setting 'url_lifetme'"),
    ('url_lifetime = "5"\n', "must be int"),
    ("url_lifetime = 0\n", "setting 'url_lifetime' must be an integer from 1 to 604,800, not 0"),
    ('storage = "gcs"\n', "one of fs, s3"),
    ("s3_secure = 1\n", "must be bool"),
    ('[[keys]]\nkey = "ak_x"\nscopes = [{ prefix = "a/", access = "admin" }]\n',
     "keys[0]: scope prefix must be a string and access read or write"),
    ('[prices]\negress = { aws = 1.0 }\n', "unknown price table"),
    ("data_dir = '/tmp'\n", "unknown setting 'data_dir'"),
])
def test_bad_file_settings_are_refused_with_the_name(tmp_path, text, message):
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(ValueError, match=re.escape(message)):
        load_toml(Settings(data_dir=tmp_path), path)


def test_key_scopes_read_the_same_from_the_file_and_the_admin_api(tmp_path):
    path = tmp_path / "keys.toml"
    path.write_text('default_key = false\n[[keys]]\nkey = "ak_all"\n'
                    '[[keys]]\nkey = "ak_r"\nscopes = [{ prefix = "p/" }]\n')
    file_keys = load_toml(Settings(data_dir=tmp_path), path).keys
    app = create_app({"data_dir": tmp_path / "d"})
    client = app.test_client()
    api = [client.post("/_emulator/keys", json=body).get_json()["scopes"]
           for body in ({}, {"scopes": [{"prefix": "p/"}]})]
    assert [list(k.scopes) for k in file_keys] == [
        [(s["prefix"], s["access"]) for s in scopes] for scopes in api]


def test_create_app_refuses_unknown_names_and_mistyped_values(tmp_path):
    with pytest.raises(ValueError, match="unknown setting.*url_lifetme"):
        create_app({"data_dir": tmp_path, "url_lifetme": 5})
    with pytest.raises(ValueError, match="must be int"):
        create_app({"data_dir": tmp_path, "max_files": "10"})
    assert settings_from({"data_dir": tmp_path, "faults": ["no-fencing"]}).faults == {
        "no-fencing"}


def test_a_misspelt_serve_variable_is_refused_and_a_known_one_is_read(tmp_path):
    env = {**os.environ, "O41_EMULATOR_SERVE_URL_LIFETME": "5"}
    r = subprocess.run([sys.executable, "-m", "emulator", "serve", "--port", "0"], env=env,
                       capture_output=True, text=True, timeout=HANG_GUARD)
    assert r.returncode == 2 and "O41_EMULATOR_SERVE_URL_LIFETME" in r.stderr
    env = {**os.environ, "O41_EMULATOR_SERVE_URL_LIFETIME": "0"}
    r = subprocess.run([sys.executable, "-m", "emulator", "serve", "--port", "0"], env=env,
                       capture_output=True, text=True, timeout=HANG_GUARD)
    assert r.returncode == 2 and "url-lifetime" in r.stderr
