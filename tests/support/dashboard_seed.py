"""A small world for the dashboard to show: the page's cloud hops, a fork, and fallbacks.

- `experiments/run-1234`: box-a on aws writes five checkpoints and uploads a sixth; box-b on
  gcp resumes (fencing box-a, whose sixth is then refused) and reads step 500 cross-cloud;
  box-c on azure resumes from step 900 the same way.
- `experiments/run-1234-ablation`: forked from step 300 by a box in aws/us-west-2, a region
  with no location: its checkpoints go to aws's default location (inter-region).
- `experiments/lambda-run`: a box in a cloud with no location at all: the fallback.
- `scratch/notebook`: opened, never written.
"""

from __future__ import annotations

from tests.support.emulator_http import AWS, AZURE, GCP, Box, Http

RUN = "experiments/run-1234"
FORK = "experiments/run-1234-ablation"
LAMBDA = "experiments/lambda-run"
SCRATCH = "scratch/notebook"
US_WEST = {"cloud": "aws", "region": "us-west-2"}
LAMBDA_PLACE = {"cloud": "lambda", "region": "us-east-1"}
KB = 1000


def _blob(step: int, size: int) -> dict[str, bytes]:
    return {"model.safetensors": bytes([step % 251]) * size, "optimizer.pt": b"o" * (size // 4)}


def _commit(box: Box, step: int, size: int) -> None:
    r = box.checkpoint(f"step-{step:08d}", _blob(step, size))
    assert r.status == 200, r.body


def _read_all(http: Http, opened: dict) -> None:
    """Download every file of the resumed version, as a relaunched run does."""
    for f in opened["resume_from"]["files"]:
        assert http.request("GET", f["url"], key=None).status == 200


def seed(http: Http, size: int = 200 * KB) -> None:
    a = Box(http, RUN, AWS, holder="box-a")
    a.open()
    for step in (100, 200, 300, 400, 500):
        _commit(a, step, size)
    late = _blob(600, size)
    zombie = a.write("step-00000600", late)
    a.upload(zombie, late)

    b = Box(http, RUN, GCP, holder="box-b")
    _read_all(http, b.open().body)
    assert a.commit(zombie.body["upload"]).status == 409
    for step in (510, 600, 700, 800, 900):
        _commit(b, step, size)

    c = Box(http, RUN, AZURE, holder="box-c")
    _read_all(http, c.open().body)
    _commit(c, 910, size)

    d = Box(http, FORK, US_WEST, holder="box-d")
    _read_all(http, d.open(f"o41://{RUN}/step-00000300").body)
    for step in (310, 320):
        _commit(d, step, size)

    e = Box(http, LAMBDA, LAMBDA_PLACE, holder="box-e")
    e.open()
    for step in (10, 20, 30):
        _commit(e, step, size * 2)

    assert Box(http, SCRATCH, AWS, holder="notebook").open().status == 200
