"""The S3 server of the S3-backend tests is chosen in one place, and a real one is strict."""

from __future__ import annotations

import io
import uuid

import pytest

from emulator.storage.s3 import S3Storage
from tests.support.s3_servers import chosen, parse_choice


def test_s3_server_choice_defaults_to_moto_and_reads_the_environment(monkeypatch):
    monkeypatch.delenv("O41_TEST_S3", raising=False)
    assert chosen(None) == "moto"
    monkeypatch.setenv("O41_TEST_S3", "seaweedfs")
    assert chosen(None) == "seaweedfs"
    assert chosen("moto") == "moto"  # the option wins over the environment


@pytest.mark.parametrize("bad", ["minio", "127.0.0.1:9000", "http://127.0.0.1:9000",
                                 "ftp://k:s@127.0.0.1:9000"])
def test_s3_server_choice_refuses_what_names_no_server_or_no_keys(bad):
    with pytest.raises(ValueError, match="moto, seaweedfs or a URL"):
        parse_choice(bad)


def test_s3_server_url_carries_its_keys(tmp_path):
    from tests.support.s3_servers import s3_server

    with s3_server("http://ak%2Fx:s%40cret@127.0.0.1:9000", tmp_path) as server:
        assert (server.endpoint, server.access_key, server.secret_key) == (
            "http://127.0.0.1:9000", "ak/x", "s@cret")


def test_real_s3_server_refuses_a_wrong_secret_key(s3_server):
    if s3_server.name == "moto":
        pytest.skip("moto's server accepts any key: run with --s3-server seaweedfs")
    bucket = f"unit-{uuid.uuid4().hex[:10]}"
    good = S3Storage(s3_server.endpoint, s3_server.access_key, s3_server.secret_key)
    good.ensure_bucket(bucket)
    wrong = S3Storage(s3_server.endpoint, s3_server.access_key, s3_server.secret_key + "x")
    from minio.error import S3Error

    with pytest.raises(S3Error) as refused:
        wrong.put(bucket, "k", io.BytesIO(b"x"))
    assert refused.value.code == "SignatureDoesNotMatch"
