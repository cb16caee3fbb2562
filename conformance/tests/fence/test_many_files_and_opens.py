"""Past a first page of files and of opens: a version of more than ten files lists, signs
and serves every one of them (READ-2.a, OPEN-2.a), and every one of more than ten relaunches
of one artifact raises the epoch and names whom it fenced (FENCE-1.a, FENCE-2.d)."""

from __future__ import annotations

import pytest

from conformance.actions import commit_ok
from conformance.actions import download
from conformance.actions import file_specs
from conformance.actions import make_files
from conformance.actions import open_box
from conformance.checks import expect_error
from conformance.checks import expect_ok
from conformance.client import Client
from conformance.env import Env
from conformance.rules import check
from conformance.rules import check_equal

MANY = 13


@pytest.mark.rule("READ-2.a", "OPEN-2.a", "API-1.d")
def test_version_of_many_files_lists_and_serves_every_one(o41_env: Env, o41_api: Client) -> None:
    a = open_box(o41_api, o41_env.artifact("files-many"), "box-a")
    files = make_files({f"shard-{i:02d}.bin": 20 + i for i in range(MANY)}, 60)
    specs = [f.as_json() for f in file_specs(files)]
    write = expect_ok(o41_api.write(a.artifact, a.token, "step-00000001", specs), "API-1.d",
                      "write")
    check_equal(sorted(f.get("name") for f in write.get("files") or []), sorted(files),
                "API-1.d", f"PUT URLs of a write of {MANY} files")
    for f in write["files"]:
        check(o41_api.put(f["url"], files[f["name"]]).ok, "VER-4", f"PUT of {f['name']}")
    expect_ok(o41_api.commit(a.artifact, a.token, write["upload"]), "VER-4", "commit")
    body = expect_ok(o41_api.read(a.artifact, urls=True), "READ-2.a", "read")
    check_equal(download(o41_api, body), files, "READ-2.a", f"the {MANY} files of the version")
    b = open_box(o41_api, a.artifact, "box-b", rule="OPEN-2")
    resumed = b.opened.get("resume_from") or {}
    check_equal(download(o41_api, resumed), files, "OPEN-2.a", f"resume_from's {MANY} files")


@pytest.mark.rule("FENCE-1.a", "FENCE-2.d", "FENCE-2.a")
def test_every_one_of_many_relaunches_raises_the_epoch(o41_env: Env, o41_api: Client) -> None:
    name = o41_env.artifact("opens-many")
    boxes = [open_box(o41_api, name, "box-00")]
    commit_ok(o41_api, boxes[0], "step-00000001", make_files({"m": 4}))
    for i in range(1, MANY):
        box = open_box(o41_api, name, f"box-{i:02d}", rule="FENCE-1")
        last = boxes[-1]
        check(box.epoch > last.epoch, "FENCE-1.a",
              f"open {i + 1} of {MANY} got epoch {box.epoch} after {last.epoch}")
        check_equal(box.opened.get("fenced"), {"epoch": last.epoch, "holder": last.holder},
                    "FENCE-2.d", f"fenced of open {i + 1}")
        boxes.append(box)
    spec = [f.as_json() for f in file_specs(make_files({"m": 4}, 2))]
    expect_error(o41_api.write(name, boxes[-2].token, "step-00000002", spec), 409, "fenced",
                 "FENCE-2.a", f"a write with the token of open {MANY - 1}")
    commit_ok(o41_api, boxes[-1], "step-00000002", make_files({"m": 4}, 3), rule="FENCE-4")
