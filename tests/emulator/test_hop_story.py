"""The page's story end to end against a served emulator: a spot run hopping clouds.

Box A trains on aws/us-east-1; B relaunches on gcp/europe-west4, fences A and reads the
latest once with parallel ranged GETs; C later hops to azure/westeurope. Runs on both
storage backends, through `o41-emulator serve` as a user starts it.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests

from tests.support.backends import BACKENDS
from tests.support.emulator_http import AWS, AZURE, GCP, Box, sha


def ranged_download(url: str, size: int, parts: int = 8) -> bytes:
    bounds = [(i * size // parts, (i + 1) * size // parts - 1) for i in range(parts)]

    def get(span: tuple[int, int]) -> bytes:
        r = requests.get(url, headers={"Range": f"bytes={span[0]}-{span[1]}"}, timeout=30)
        assert r.status_code == 206, r.text
        return r.content

    with ThreadPoolExecutor(parts) as pool:
        return b"".join(pool.map(get, bounds))


@pytest.fixture(params=BACKENDS)
def served(request, live_factory, tmp_path):
    if request.param == "fs":
        return live_factory("--data-dir", str(tmp_path / "data"))
    cfg = tmp_path / "s3.toml"
    tag = os.urandom(4).hex()
    cfg.write_text("".join(
        f'[[locations]]\ncloud = "{c}"\nregion = "{r}"\nbucket = "hop-{c}-{tag}"\n'
        for c, r in (("aws", "us-east-1"), ("gcp", "europe-west4"), ("azure", "westeurope"))
    ))
    return live_factory("--data-dir", str(tmp_path / "data"),
                        *request.getfixturevalue("s3_server").serve_args(), "--config", str(cfg))


def test_spot_run_hops_clouds_fences_zombie_and_pays_two_cross_cloud_reads(served, artifact):
    http = served.http
    step500 = os.urandom(1 << 20)
    a = Box(http, artifact, AWS, holder="box-a")
    assert a.open().body["resume_from"] is None
    for step in (100, 200, 300, 400):
        assert a.checkpoint(f"step-{step:08d}").status == 200
    assert a.checkpoint("step-00000500", {"model.bin": step500}).status == 200
    zombie_files = {"model.bin": b"late" * 100}
    late = a.write("step-00000600", zombie_files)
    a.upload(late, zombie_files)  # uploaded before B's open

    b = Box(http, artifact, GCP, holder="box-b")
    opened = b.open().body
    assert opened["fenced"] == {"epoch": 1, "holder": "box-a"}
    resumed = opened["resume_from"]
    assert resumed["version"] == "step-00000500"
    assert resumed["cross_cloud"] is True and resumed["route"] == "cross_cloud"
    assert resumed["location"] == AWS

    refused = a.commit(late.body["upload"])
    assert (refused.status, refused.code) == (409, "fenced")

    f = resumed["files"][0]
    got = ranged_download(f["url"], f["size"])
    assert got == step500 and sha(got) == f["sha256"]

    w = b.write("step-00000510", {"model.bin": b"b" * 1000})
    assert w.body["location"] == GCP and w.body["route"] == "local"
    b.upload(w, {"model.bin": b"b" * 1000})
    assert b.commit(w.body["upload"]).status == 200
    step900 = os.urandom(300_000)
    assert b.checkpoint("step-00000900", {"model.bin": step900}).status == 200

    c = Box(http, artifact, AZURE, holder="box-c")
    c_open = c.open().body
    assert c_open["resume_from"]["version"] == "step-00000900"
    assert c_open["resume_from"]["cross_cloud"] is True
    assert ranged_download(c_open["resume_from"]["files"][0]["url"], len(step900)) == step900
    assert c.checkpoint("step-00000910").body["location"] == AZURE

    listed = http.request("GET", "/api/v1/versions/list", params={"artifact": artifact}).body
    names = [v["version"] for v in listed["versions"]]
    assert "step-00000600" not in names and names[-1] == "step-00000910"

    usage = b.usage().body
    cross = [t for t in usage["transfers"] if t["route"] == "cross_cloud"]
    assert sorted((t["direction"], t["version"], t["bytes"]) for t in cross) == [
        ("read", "step-00000500", len(step500)),
        ("read", "step-00000900", len(step900)),
    ]
    assert all(t["route"] == "local" for t in usage["transfers"] if t["direction"] == "write")
    price = {t["version"]: t["cost_usd"] for t in cross}
    assert price["step-00000500"] == pytest.approx(len(step500) / 1e9 * 0.09)  # leaves aws
    assert price["step-00000900"] == pytest.approx(len(step900) / 1e9 * 0.12)  # leaves gcp
    assert usage["routes"]["cross_cloud"]["cost_usd"] == pytest.approx(sum(price.values()))
    assert usage["routes"]["inter_region"]["write_bytes"] == 0


def test_page_snippet_runs_verbatim_and_downloads_exact_bytes(served, artifact, tmp_path,
                                                              monkeypatch):
    payload = {"model.safetensors": os.urandom(70_000), "optimizer.pt": os.urandom(3_000)}
    box = Box(served.http, artifact, AWS)
    box.open()
    assert box.checkpoint("step-00000300", payload).status == 200
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("O41_ARTIFACTS_API_KEY", "ak_local")
    api = served.url + "/api/v1"
    project, name = artifact.split("/")
    # The page's snippet, only `api` (and the artifact, unique per test) set for this emulator:
    snippet = f'''
import os, requests
api = "{api}"
key = os.environ["O41_ARTIFACTS_API_KEY"]
r = requests.get(f"{{api}}/versions/read?artifact={project}/{name}&version=latest&urls=1",
                 headers={{"Authorization": f"Bearer {{key}}"}})
for f in r.json()["files"]:
    with open(f["name"], "wb") as out:
        out.write(requests.get(f["url"]).content)
'''
    exec(compile(snippet, "page-snippet", "exec"), {})
    for file_name, data in payload.items():
        assert (tmp_path / file_name).read_bytes() == data
