"""Every setting has a type and a range, checked when the settings load (issue 20).

Each hostile value the probe found used to pass the load and break later: a 500 on every
write or PUT, `NaN` in `usage/read`, workers crashing at boot, objects written (and reset
deleting files) outside the data directory. Now each is refused at load, in the file, on
the command line, in the environment and in `create_app`'s mapping, naming the setting,
its range and where the value came from, and nothing is written.
"""

from __future__ import annotations

import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from emulator import create_app
from emulator.settings.bounds import BUCKET_RANGE, is_bucket_name
from emulator.settings.config import SETTINGS, Settings, load_toml, settings_from
from tests.support.deadlines import HANG_GUARD

DOCS = Path(__file__).resolve().parents[2] / "docs"

# (TOML text, the setting named, words of its range) for each hostile value of the issue.
HOSTILE_FILES = [
    ("url_lifetime = 9223372036854775807\n", "url_lifetime", "from 1 to 604,800"),
    ("chunk_size = 1099511627776\n", "chunk_size", "from 4,096 to 16,777,216"),
    ("read_timeout = nan\n", "read_timeout", "a finite number above 0"),
    ("read_timeout = inf\n", "read_timeout", "a finite number above 0"),
    ("upload_lifetime = -1\n", "upload_lifetime", "from 1 to"),
    ("max_json_bytes = 0\n", "max_json_bytes", "from 1,024"),
    ("[prices]\ncross_cloud = { aws = nan }\n", "prices.cross_cloud.aws", "finite number"),
    ("[prices]\ninter_region = { gcp = -0.5 }\n", "prices.inter_region.gcp", "from 0 to"),
    ("[prices]\ninter_region = { gcp = inf }\n", "prices.inter_region.gcp", "from 0 to"),
    ('[[locations]]\ncloud = "aws"\nregion = "us-east-1"\nbucket = "../../elsewhere"\n'
     'default = true\n', "locations[0].bucket", BUCKET_RANGE),
    ('[[locations]]\ncloud = "aws"\nregion = "us-east-1"\nbucket = "/etc"\n',
     "locations[0].bucket", BUCKET_RANGE),
    ('public_url = "javascript:alert(1)"\n', "public_url", "http:// or https:// URL"),
    ('allowed_hosts = ["evil.example:80"]\n', "allowed_hosts", "no ports"),
    ('allowed_origins = ["*"]\n', "allowed_origins", "scheme://host"),
    ('admin_key = "a b"\n', "admin_key", "without spaces"),
    ('[[keys]]\nkey = ""\n', "keys[1].key", "printable ASCII"),
]


@pytest.mark.parametrize("text, name, words", HOSTILE_FILES)
def test_a_hostile_file_value_is_refused_naming_the_file_setting_and_range(
        tmp_path, text, name, words):
    path = tmp_path / "hostile.toml"
    path.write_text(text)
    with pytest.raises(ValueError) as refused:
        load_toml(Settings(data_dir=tmp_path / "data"), path)
    message = str(refused.value)
    assert message.startswith(f"{path}: setting {name!r} must be "), message
    assert words in message
    assert not (tmp_path / "data").exists()  # refused before anything was made


@pytest.mark.parametrize("values, name", [
    ({"url_lifetime": 2**63 - 1}, "url_lifetime"),
    ({"chunk_size": 2**40}, "chunk_size"),
    ({"read_timeout": math.nan}, "read_timeout"),
    ({"read_timeout": math.inf}, "read_timeout"),
    ({"max_files": True}, "max_files"),
    ({"allowed_hosts": "emulator,evil example"}, "allowed_hosts"),
])
def test_create_app_refuses_hostile_values_naming_the_setting(tmp_path, values, name):
    with pytest.raises(ValueError, match=rf"^create_app: setting {name!r} must be "):
        create_app({"data_dir": tmp_path / "data", **values})
    assert not (tmp_path / "data").exists()


def test_create_app_refuses_structures_outside_their_range(tmp_path):
    from emulator.core.locations import Location
    from emulator.core.prices import Prices

    elsewhere = (Location("aws", "us-east-1", "../../elsewhere", True),)
    with pytest.raises(ValueError, match=r"locations\[0\]\.bucket.*valid S3 bucket name"):
        create_app({"data_dir": tmp_path / "data", "locations": elsewhere})
    nan = Prices(cross_cloud={"aws": math.nan, "other": 0.09})
    with pytest.raises(ValueError, match=r"prices\.cross_cloud\.aws.*finite"):
        settings_from({"data_dir": tmp_path / "data", "prices": nan})
    assert not (tmp_path / "data").exists() and not (tmp_path / "elsewhere").exists()


def serve(tmp_path: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    """`serve` as a user runs it; every case here is refused before it listens."""
    return subprocess.run(
        [sys.executable, "-m", "emulator", "serve", "--port", "0",
         "--data-dir", str(tmp_path / "data"), *args],
        env={**os.environ, **(env or {})}, capture_output=True, text=True, timeout=HANG_GUARD,
        stdin=subprocess.DEVNULL)


@pytest.mark.parametrize("flag, value, name", [
    ("--url-lifetime", "9223372036854775807", "url_lifetime"),
    ("--read-timeout", "nan", "read_timeout"),
    ("--read-timeout", "inf", "read_timeout"),
    ("--allowed-hosts", "emulator,bad/host", "allowed_hosts"),
])
def test_serve_refuses_hostile_flags_and_variables_naming_where_they_came_from(
        tmp_path, flag, value, name):
    by_flag = serve(tmp_path, flag, value)
    assert by_flag.returncode == 2, by_flag.stderr
    assert f"Invalid value for {flag}: setting {name!r} must be " in by_flag.stderr
    variable = f"O41_EMULATOR_SERVE_{name.upper()}"
    by_env = serve(tmp_path, env={variable: value})
    assert by_env.returncode == 2, by_env.stderr
    assert f"Invalid value for {variable} ({flag}): setting {name!r}" in by_env.stderr
    assert not (tmp_path / "data").exists()


def test_serve_refuses_a_hostile_config_file_before_anything_is_written(tmp_path):
    """The probe's `bucket = "../../elsewhere"`: objects landed outside the data dir, and
    /_emulator/reset deleted a file there. Now the file is refused and nothing is made."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "precious.txt").write_text("keep me")
    config = tmp_path / "o41.toml"
    config.write_text('[[locations]]\ncloud = "aws"\nregion = "us-east-1"\n'
                      'bucket = "../../elsewhere"\ndefault = true\n')
    done = serve(tmp_path / "a" / "b", "--config", str(config))
    assert done.returncode == 2
    assert re.search(r"Invalid value for --config: .*o41\.toml: setting 'locations\[0\]\."
                     r"bucket' must be a valid S3 bucket name", done.stderr), done.stderr
    assert len(done.stderr.strip().splitlines()[-1]) > 0
    assert [p.name for p in elsewhere.iterdir()] == ["precious.txt"]
    assert not (tmp_path / "a").exists()


def test_every_setting_has_a_range_and_the_docs_list_each(tmp_path):
    doc = (DOCS / "emulator.md").read_text()
    for row in SETTINGS.values():
        assert row.range, row.name
        assert f"| `{row.name}` | {row.range} |" in doc, row.name
        if int in row.kinds or float in row.kinds:
            assert row.minimum is not None and row.maximum is not None, row.name


def test_the_defaults_are_inside_their_ranges(tmp_path):
    settings = settings_from({"data_dir": tmp_path / "data"})
    assert settings.url_lifetime == 3600 and settings.allowed_hosts == ()


@pytest.mark.parametrize("name, ok", [
    ("o41-aws-us-east-1", True), ("a.b-c", True), ("abc", True),
    ("ab", False), ("a" * 64, False), ("../../x", False), ("UPPER", False), ("a..b", False),
    ("-ab", False), ("ab-", False), ("192.168.1.1", False), (".partial", False),
    ("xn--abc", False), ("abc-s3alias", False),
])
def test_bucket_names_follow_s3s_rules(name, ok):
    assert is_bucket_name(name) is ok
