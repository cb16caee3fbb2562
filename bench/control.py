"""Control plane: requests per second from concurrent keep-alive clients.

`versions/read?urls=1` (auth, two queries and a signed URL per call) is measured beside the
same server's trivial health endpoint (what the contract logic costs) and beside moto's
S3 HeadObject (the nearest call a user of moto would make), with the same driver.
"""

from __future__ import annotations

from dataclasses import dataclass

from .client import Rate, request_rate
from .servers import KEY, Emulator, Moto


@dataclass
class Rates:
    read: Rate
    trivial: Rate
    moto_head: Rate


def control_plane(emu: Emulator, moto: Moto, clients: int, seconds: float) -> Rates:
    emu.checkpoint("bench/control", 1, {"model.pt": b"m" * 4096})
    read_url = f"{emu.api}/versions/read?artifact=bench/control&version=latest&urls=1"
    auth = {"Authorization": f"Bearer {KEY}"}
    s3 = moto.s3()
    s3.create_bucket(Bucket="bench-head")
    s3.put_object(Bucket="bench-head", Key="step-1/model.pt", Body=b"m" * 4096)
    # Presigned, like the emulator's URLs: moto refuses anonymous calls on private objects.
    head_url = s3.generate_presigned_url(
        "head_object", Params={"Bucket": "bench-head", "Key": "step-1/model.pt"}, ExpiresIn=3600)
    # The three are measured in turns, each turn on fresh connections, so a burst of load
    # from elsewhere on the shared cores falls on all of them alike, and so does gunicorn's
    # luck in spreading a burst of new connections over its workers (a keep-alive
    # connection stays with the worker that accepted it).
    turns = 5
    warmup = min(0.2, seconds / turns)
    targets = {
        "read": dict(url=read_url, headers=auth),
        "trivial": dict(url=f"{emu.url}/_emulator/health"),
        "moto_head": dict(url=head_url, method="HEAD"),
    }
    totals = {name: Rate(0, 0.0, 0) for name in targets}
    for _ in range(turns):
        for name, kw in targets.items():
            r = request_rate(clients=clients, seconds=seconds / turns, warmup=warmup, **kw)
            t = totals[name]
            totals[name] = Rate(t.requests + r.requests, t.seconds + r.seconds,
                                t.errors + r.errors)
    rates = Rates(**totals)
    for name, rate in vars(rates).items():
        if rate.errors or not rate.requests:
            raise RuntimeError(f"{name}: {rate.errors} errors in {rate.requests} requests")
    return rates
