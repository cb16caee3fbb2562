"""A plain PyTorch loop as its users write it for s3://: two files a step, no transaction.

``python plain_loop.py URL --steps N --every K --keep K2``: resumes from the newest
``step-XXXXXXXX`` folder ``fs.ls`` finds (its ``model.pt`` and ``optim.pt``), trains, and
every ``K`` steps saves ``torch.save`` of the model, then of the optimizer, each into its
own ``fsspec.open``; then removes all but the newest ``K2`` steps (keep-the-last-k). Both
files carry the step they were saved at, so a load of half a step is caught. Prints
``resumed-at <step>``, ``saved <n>`` (once the step is listed: the listing commits it) and
``done <step> <checksum>``; ``--gates DIR`` makes it wait at set points for a test.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import os
import re
import time

import fsspec
import torch


def latest_step(fs: fsspec.AbstractFileSystem, root: str) -> int | None:
    if not fs.exists(root):
        return None
    found = [int(m.group(1)) for p in fs.ls(root, detail=False)
             if (m := re.fullmatch(r"step-(\d+)", p.rstrip("/").rsplit("/", 1)[-1]))]
    return max(found, default=None)


def gate(folder: str | None, name: str) -> None:
    if folder is None:
        return
    print(f"waiting at {name}", flush=True)
    while not any(os.path.exists(os.path.join(folder, n)) for n in (name, "all")):
        time.sleep(0.05)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("url")
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--every", type=int, default=2)
    parser.add_argument("--keep", type=int, default=2)
    parser.add_argument("--gates", help="a folder: after the resume read, wait for its file "
                        "`resume`; after saving step N, for its file `N`; `all` opens every "
                        "gate (a test orders a zombie and its relaunch)")
    args = parser.parse_args()
    torch.manual_seed(0)
    model = torch.nn.Linear(8, 4)
    optim = torch.optim.AdamW(model.parameters(), lr=0.01)
    fs, root = fsspec.core.url_to_fs(args.url)
    step = 0
    resume = latest_step(fs, root)
    if resume is not None:
        with fs.open(f"{root}/step-{resume:08d}/model.pt", "rb") as f:
            saved = torch.load(io.BytesIO(f.read()))
        with fs.open(f"{root}/step-{resume:08d}/optim.pt", "rb") as f:
            moments = torch.load(io.BytesIO(f.read()))
        assert saved["step"] == moments["step"] == resume, (saved["step"], moments["step"])
        model.load_state_dict(saved["model"])
        optim.load_state_dict(moments["optim"])
        step = resume
        print(f"resumed-at {step}", flush=True)
    gate(args.gates, "resume")
    data = torch.Generator().manual_seed(1)
    for _ in range(step):
        torch.randn(16, 8, generator=data)
    while step < args.steps:
        x = torch.randn(16, 8, generator=data)
        loss = model(x).pow(2).mean()
        optim.zero_grad()
        loss.backward()
        optim.step()
        step += 1
        if step % args.every == 0:
            folder = f"{root}/step-{step:08d}"
            with fsspec.open(f"{args.url}/step-{step:08d}/model.pt", "wb") as f:
                torch.save({"step": step, "model": model.state_dict()}, f)
            with fsspec.open(f"{args.url}/step-{step:08d}/optim.pt", "wb") as f:
                torch.save({"step": step, "optim": optim.state_dict()}, f)
            steps = sorted(int(p.rstrip("/").rsplit("-", 1)[-1])
                           for p in fs.ls(root, detail=False) if "step-" in p)
            for old in steps[:-args.keep]:
                fs.rm(f"{root}/step-{old:08d}", recursive=True)
            assert fs.exists(folder)
            print(f"saved {step}", flush=True)
            gate(args.gates, str(step))
    weights = b"".join(p.detach().numpy().tobytes() for p in model.parameters())
    print(f"done {step} {hashlib.sha256(weights).hexdigest()[:16]}", flush=True)


if __name__ == "__main__":
    main()
