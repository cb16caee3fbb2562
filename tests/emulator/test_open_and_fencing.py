"""OPEN-1..3, FORK-1..2, FENCE-1..4 through the HTTP API, on both storage backends."""

from __future__ import annotations

from tests.support.emulator_http import AWS, GCP, Box


def test_open_latest_on_new_artifact_creates_it_with_nothing_to_resume(http, artifact):
    r = Box(http, artifact, AWS).open("latest")
    assert r.status == 200
    assert r.body["resume_from"] is None and r.body["fenced"] is None
    assert r.body["epoch"] == 1
    assert r.body["write_location"] == {**AWS, "route": "local"}
    art = http.request("GET", "/api/v1/artifacts/read", params={"artifact": artifact})
    assert art.status == 200 and art.body["latest"] is None and art.body["versions"] == 0


def test_open_latest_returns_latest_committed_version_signed(http, artifact):
    a = Box(http, artifact, AWS)
    a.open()
    for step in (100, 200, 300):
        assert a.checkpoint(f"step-{step:08d}").status == 200
    r = Box(http, artifact, AWS).open("latest")
    resumed = r.body["resume_from"]
    assert resumed["version"] == "step-00000300" and resumed["step"] == 300
    assert all(f["url"].startswith("http") for f in resumed["files"])
    assert resumed["urls_expire_at"].endswith("Z")
    got = http.request("GET", resumed["files"][0]["url"], key=None)
    assert got.status == 200 and got.content == b"step-00000300" * 10


def test_open_fresh_refused_when_checkpoints_and_nothing_changes(http, artifact):
    a = Box(http, artifact, AWS)
    a.open()
    a.checkpoint("step-00000100")
    r = Box(http, artifact, GCP).open(None)
    assert (r.status, r.code) == (409, "has_checkpoints")
    art = http.request("GET", "/api/v1/artifacts/read", params={"artifact": artifact}).body
    assert art["epoch"] == 1 and art["holder"] == a.holder
    assert a.checkpoint("step-00000200").status == 200  # FENCE-4: A keeps writing


def test_open_fresh_on_empty_artifact_succeeds(http, artifact):
    r = Box(http, artifact, AWS).open(None)
    assert r.status == 200 and r.body["resume_from"] is None


def test_fork_into_new_artifact_returns_source_and_records_fork(http, artifact):
    src = Box(http, artifact, AWS)
    src.open()
    src.checkpoint("step-00000100")
    src.checkpoint("step-00000200")
    target = artifact + "-fork"
    fork = Box(http, target, GCP)
    r = fork.open(f"o41://{artifact}/step-00000100")
    assert r.status == 200
    assert r.body["resume_from"]["artifact"] == artifact
    assert r.body["resume_from"]["version"] == "step-00000100"
    assert r.body["fenced"] is None
    art = http.request("GET", "/api/v1/artifacts/read", params={"artifact": target}).body
    assert art["forked_from"] == {"artifact": artifact, "version": "step-00000100"}
    source = http.request("GET", "/api/v1/artifacts/read", params={"artifact": artifact}).body
    assert source["epoch"] == 1 and source["holder"] == src.holder  # FORK-2: untouched
    assert src.checkpoint("step-00000300").status == 200


def test_fork_into_artifact_with_versions_refused_not_empty(http, artifact):
    src = Box(http, artifact, AWS)
    src.open()
    src.checkpoint("step-00000100")
    other = Box(http, artifact + "-b", AWS)
    other.open()
    other.checkpoint("step-00000001")
    r = Box(http, artifact + "-b", GCP).open(f"o41://{artifact}/step-00000100")
    assert (r.status, r.code) == (409, "not_empty")
    art = http.request("GET", "/api/v1/artifacts/read", params={"artifact": artifact + "-b"})
    assert art.body["epoch"] == 1 and art.body["forked_from"] is None


def test_fork_from_missing_checkpoint_is_not_found(http, artifact):
    src = Box(http, artifact, AWS)
    src.open()
    r = Box(http, artifact + "-f", AWS).open(f"o41://{artifact}/step-00000999")
    assert (r.status, r.code) == (404, "not_found")


def test_fork_with_malformed_location_is_invalid(http, artifact):
    for bad in ("o41://only-one/step-00000001", f"o41://{artifact}/step-1", "s3://x/y/z", 5):
        r = Box(http, artifact, AWS).open(bad)
        assert (r.status, r.code) == (400, "invalid_argument"), bad


def test_open_epochs_strictly_increase_and_name_whom_they_fenced(http, artifact):
    boxes = [Box(http, artifact, AWS) for _ in range(4)]
    epochs = []
    for i, box in enumerate(boxes):
        r = box.open()
        epochs.append(r.body["epoch"])
        if i:
            assert r.body["fenced"] == {"epoch": epochs[i - 1], "holder": boxes[i - 1].holder}
    assert epochs == sorted(set(epochs))


def test_write_and_commit_with_fenced_token_refused(http, artifact):
    a, b = Box(http, artifact, AWS), Box(http, artifact, GCP)
    a.open()
    a.checkpoint("step-00000100")
    files = {"w.bin": b"zombie"}
    early = a.write("step-00000200", files)  # uploaded before B's open
    a.upload(early, files)
    b.open()
    late = a.commit(early.body["upload"])
    assert (late.status, late.code) == (409, "fenced")
    assert b.holder in late.body["error"]["message"]
    w = a.write("step-00000300", files)
    assert (w.status, w.code) == (409, "fenced")
    latest = b.read().body
    assert latest["version"] == "step-00000100"  # FENCE-3: the zombie's commit never shows


def test_commit_of_old_upload_with_newer_token_still_fenced(http, artifact):
    a, b = Box(http, artifact, AWS), Box(http, artifact, GCP)
    a.open()
    files = {"w.bin": b"x"}
    w = a.write("step-00000100", files)
    a.upload(w, files)
    b.open()
    r = b.commit(w.body["upload"])
    assert (r.status, r.code) == (409, "fenced")


def test_refused_open_fences_nobody(http, artifact):
    a = Box(http, artifact, AWS)
    a.open()
    a.checkpoint("step-00000100")
    for resume in (None, f"o41://{artifact}/step-00000100", "o41://bad"):
        assert Box(http, artifact, GCP).open(resume).status >= 400
    assert a.checkpoint("step-00000200").status == 200


def test_token_of_another_artifact_or_unknown_is_invalid(http, artifact):
    a, other = Box(http, artifact, AWS), Box(http, artifact + "-o", AWS)
    a.open()
    other.open()
    a.token = other.token
    assert a.write("step-00000001", {"f": b""}).code == "invalid_argument"
    a.token = "tk_nope"
    r = a.write("step-00000001", {"f": b""})
    assert (r.status, r.code) == (400, "invalid_argument")


def test_unknown_upload_is_not_found(http, artifact):
    a = Box(http, artifact, AWS)
    a.open()
    r = a.commit("up_missing")
    assert (r.status, r.code) == (404, "not_found")


def test_holder_is_made_up_when_missing(http, artifact):
    r = http.request("POST", "/api/v1/artifacts/open",
                     json={"artifact": artifact, "resume": "latest"})
    assert r.status == 200 and r.body["holder"]
