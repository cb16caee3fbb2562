"""The OpenAPI 3.1 document stays true: every response of the hop scenario matches it.

The scenario is the page's story (a run hopping aws -> gcp -> azure, a zombie fenced, a
fork, a fallback) plus each refusal the contract names, recorded call by call and checked
against the document served at `/api/v1/openapi.json`; the document must also describe
every `/api/v1` route the app has, and no other.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import pytest
from jsonschema.exceptions import ValidationError
from openapi_schema_validator import OAS31Validator
from openapi_spec_validator import validate as validate_spec
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

from emulator import create_app
from emulator.rules.openapi import document
from tests.support.backends import make_settings
from tests.support.emulator_http import AWS, AZURE, GCP, Box, Http, Reply, sha

BASE = "urn:o41:openapi"
API = "/api/v1"


@dataclass
class Call:
    method: str
    path: str  # relative to /api/v1, without the query
    sent: Any
    reply: Reply


class RecordingHttp(Http):
    """An Http that keeps every /api/v1 call; data-plane URLs pass through unrecorded."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.calls: list[Call] = []

    def request(self, method: str, path_or_url: str, **kw: Any) -> Reply:
        reply = super().request(method, path_or_url, **kw)
        if path_or_url.startswith(API + "/"):
            self.calls.append(Call(method.lower(), path_or_url.removeprefix(API), kw.get("json"),
                                   reply))
        return reply


def pointer(*parts: str) -> str:
    return "#/" + "/".join(p.replace("~", "~0").replace("/", "~1") for p in parts)


class Checker:
    """Validates bodies against the schema at a JSON pointer into the served document."""

    def __init__(self, spec: dict) -> None:
        self.spec = spec
        resource = Resource.from_contents(spec, default_specification=DRAFT202012)
        self.registry = Registry().with_resource(BASE, resource)

    def validate(self, ptr: str, instance: Any) -> None:
        schema = {"$ref": BASE + ptr}
        OAS31Validator(schema, registry=self.registry,
                       format_checker=OAS31Validator.FORMAT_CHECKER).validate(instance)

    def response(self, call: Call) -> None:
        op = self.spec["paths"].get(call.path, {}).get(call.method)
        assert op is not None, f"{call.method.upper()} {call.path} is not in the document"
        status = str(call.reply.status)
        documented = op["responses"].get(status)
        assert documented is not None, f"{call.method.upper()} {call.path} -> {status} " \
                                        f"undocumented: {call.reply.body}"
        if "$ref" in documented:
            ptr = documented["$ref"] + pointer("content", "application/json", "schema")[1:]
        else:
            ptr = pointer("paths", call.path, call.method, "responses", status, "content",
                          "application/json", "schema")
        self.validate(ptr, call.reply.body)

    def request(self, call: Call) -> None:
        if call.sent is not None and call.reply.status == 200:
            self.validate(pointer("paths", call.path, call.method, "requestBody", "content",
                                  "application/json", "schema"), call.sent)


@pytest.fixture
def app(tmp_path, request):
    return create_app(make_settings(tmp_path, request, "fs"))


@pytest.fixture
def spec(app) -> dict:
    r = app.test_client().get(API + "/openapi.json")  # no key: the document is public
    assert r.status_code == 200
    return r.get_json()


def test_document_is_valid_openapi_3_1_and_is_what_is_served(spec):
    assert spec["openapi"].startswith("3.1")
    validate_spec(spec)
    assert spec == document()


def test_document_describes_every_api_route_and_no_other(app, spec):
    served = {
        (re.sub(r"^/api/v1", "", rule.rule), method.lower())
        for rule in app.url_map.iter_rules() if rule.rule.startswith(API + "/")
        for method in rule.methods - {"HEAD", "OPTIONS"}
    }
    documented = {(path, m) for path, ops in spec["paths"].items() for m in ops}
    assert served == documented


def hop_scenario(http: RecordingHttp, app) -> None:
    """The page's story and every refusal along it, each reply recorded."""
    run = "experiments/run-1234"
    assert http.request("POST", API + "/artifacts/open", key=None,
                        json={"artifact": run}).status == 401
    a = Box(http, run, AWS, holder="box-a")
    assert a.open().body["resume_from"] is None
    for step in (100, 200, 300, 400, 500):
        assert a.checkpoint(f"step-{step:08d}").status == 200
    assert a.write("step-1", {"x": b"1"}).status == 400
    assert a.write("step-00000050", {"x": b"1"}).status == 409  # not after latest
    assert a.write("step-00000501", {"x": b"1" * 10}).status == 200
    huge = a.http.request("POST", API + "/versions/write", json={
        "artifact": run, "token": a.token, "version": "step-00000502",
        "files": [{"name": "x", "size": 1 << 50, "sha256": sha(b"")}]})
    assert huge.status == 413
    unsent = a.write("step-00000503", {"x": b"never sent"})
    assert a.commit(unsent.body["upload"]).status == 409  # incomplete
    assert Box(http, run, AWS).open(resume=None).status == 409  # has checkpoints
    zombie_files = {"model.bin": b"late" * 50}
    zombie = a.write("step-00000600", zombie_files)
    a.upload(zombie, zombie_files)

    b = Box(http, run, GCP, holder="box-b")
    resumed = b.open().body["resume_from"]
    assert resumed["cross_cloud"] is True
    assert a.commit(zombie.body["upload"]).status == 409  # fenced
    for f in resumed["files"]:
        assert http.request("GET", f["url"], key=None, headers={"Range": "bytes=0-9"}).status == 206
    done = b.checkpoint("step-00000900")
    assert done.status == 200
    assert b.read(place="azure/westeurope").body["route"] == "cross_cloud"
    assert b.read(urls=False).body["route"] is None
    assert b.read("step-00000777").status == 404

    c = Box(http, run, AZURE, holder="box-c")
    assert c.open().body["fenced"]["holder"] == "box-b"
    written = c.write("step-00000910", {"w": b"c" * 100})
    c.upload(written, {"w": b"c" * 100})
    assert c.commit(written.body["upload"]).status == 200
    assert c.commit(written.body["upload"]).status == 409  # version exists
    assert c.commit("up_nope").status == 404
    # Two ranks in one upload, one file streamed (VER-5, VER-6), then keep-the-last-1 (VER-7).
    first = c.http.request("POST", API + "/versions/write", json={
        "artifact": run, "token": c.token, "version": "step-00000920",
        "files": [{"name": "rank0.distcp"}]})
    up = first.body["upload"]
    second = c.http.request("POST", API + "/versions/write", json={
        "artifact": run, "token": c.token, "version": "step-00000920", "upload": up,
        "files": [{"name": ".metadata", "size": 2, "sha256": sha(b"md")}]})
    assert second.status == 200
    put = http.request("PUT", first.body["files"][0]["url"], key=None, data=b"shard")
    c.upload(second, {".metadata": b"md"})
    assert c.http.request("POST", API + "/versions/commit", json={
        "artifact": run, "token": c.token, "upload": up}).status == 409  # not listed
    assert c.http.request("POST", API + "/versions/commit", json={
        "artifact": run, "token": c.token, "upload": up, "files": [put.body]}).status == 200
    delete = {"artifact": run, "token": c.token}
    assert c.http.request("POST", API + "/versions/delete",
                          json={**delete, "version": "step-00000920"}).status == 409  # latest
    assert c.http.request("POST", API + "/versions/delete",
                          json={**delete, "version": "step-00000910"}).status == 200
    assert c.http.request("POST", API + "/versions/delete",
                          json={**delete, "version": "step-00000910"}).status == 404

    fork = Box(http, "experiments/ablation", {"cloud": "aws", "region": "us-west-2"})
    assert fork.open(f"o41://{run}/step-00000300").body["warnings"]
    assert Box(http, run, AWS).open(f"o41://{run}/step-00000300").status == 409  # not empty
    assert Box(http, "experiments/x", AWS).open("o41://experiments/nope/step-00000001").status \
        == 404
    lam = Box(http, "experiments/lambda", {"cloud": "lambda", "region": "us-east-1"})
    lam.open()
    assert lam.checkpoint("step-00000001").status == 200
    assert Box(http, "experiments/unplaced", None).open().status == 200

    reader = app.test_client().post("/_emulator/keys", json={
        "key": "ak_reader", "scopes": [{"prefix": "experiments/", "access": "read"}]})
    assert reader.status_code == 201
    assert Box(http, "experiments/new", AWS, key="ak_reader").open().status == 403
    assert b.read(key="ak_reader").status == 200
    assert http.request("GET", API + "/artifacts/read", params={"artifact": run}).status == 200
    assert http.request("GET", API + "/artifacts/read",
                        params={"artifact": "experiments/ablation"}).status == 200
    assert http.request("GET", API + "/artifacts/read", params={"artifact": "no/such"}).status \
        == 404
    assert http.request("GET", API + "/versions/list", params={"artifact": run}).status == 200
    assert http.request("GET", API + "/versions/list",
                        params={"artifact": run, "place": "gcp/europe-west4"}).status == 200
    assert http.request("GET", API + "/versions/list", params={"artifact": "bad"}).status == 400
    assert http.request("GET", API + "/usage/read").status == 200
    assert http.request("GET", API + "/usage/read", params={"artifact": run}).status == 200
    assert http.request("GET", API + "/usage/read", key="ak_reader",
                        params={"artifact": "other/x"}).status == 403
    assert http.request("GET", API + "/openapi.json", key=None).status == 200


def test_every_response_of_the_hop_scenario_matches_the_document(app, spec):
    http = RecordingHttp("http://localhost", app.test_client())
    hop_scenario(http, app)
    checker = Checker(spec)
    for call in http.calls:
        checker.response(call)
        checker.request(call)
    seen = {(c.path, c.method, c.reply.status) for c in http.calls}
    # Every documented operation was exercised and answered 200 at least once...
    for path, ops in spec["paths"].items():
        for method in ops:
            assert (path, method, 200) in seen, f"{method.upper()} {path} never succeeded"
    # ...and every error status of the contract was met along the way.
    assert {s for _, _, s in seen} >= {200, 400, 401, 403, 404, 409, 413}


def test_document_refuses_an_undocumented_field_or_a_wrong_code(app, spec):
    http = RecordingHttp("http://localhost", app.test_client())
    box = Box(http, "experiments/strict", AWS)
    box.open()
    committed = box.checkpoint("step-00000001")
    checker = Checker(spec)
    checker.response(http.calls[-1])
    extra = Call("post", "/versions/commit", None,
                 Reply(200, {**committed.body, "surprise": 1}, b"", {}))
    with pytest.raises(ValidationError):
        checker.response(extra)
    wrong_code = Call("post", "/versions/commit", None,
                      Reply(409, {"error": {"code": "not_found", "message": "m"}}, b"", {}))
    with pytest.raises(ValidationError):
        checker.response(wrong_code)
