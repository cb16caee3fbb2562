"""Lightning's ``save_top_k`` with ``save_last`` bounds an ``o41://`` artifact as it bounds a
local folder or a bucket (issue 32, item 4).

``ModelCheckpoint(save_top_k=3, save_last=True, every_n_train_steps=1, monitor=...)`` leaves
the three best checkpoints and one ``last.ckpt`` on local disk. Through ``o41://`` each save
is a version; a step that saved only ``last.ckpt`` is replaced by name at the next step, and
Lightning never removes a ``last.ckpt`` it writes over. So the artifact keeps the versions of
the three best checkpoints and the latest, whose files at the top are the local folder's.
Each fit here runs the same seeded fit on local disk and through the emulator and compares.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
import requests

from tests.support.trainer_runs import start, versions

if TYPE_CHECKING:
    from tests.support.client_fixtures import Emulator

pytest_plugins = ["tests.support.client_fixtures"]
torch = pytest.importorskip("torch", reason="torch is not installed (pip install -e '.[test]')")
L = pytest.importorskip("lightning", reason="lightning is not installed (pip install -e '.[test]')")

from lightning.pytorch.callbacks import Callback, ModelCheckpoint  # noqa: E402
from torch.utils.data import DataLoader, TensorDataset  # noqa: E402

TOP_K, STEPS = 3, 30
_STEP = re.compile(r"step=(\d+)")


class Model(L.LightningModule):
    def __init__(self) -> None:
        super().__init__()
        # Seeded here, not by torch's global generator (the tests before this one move it):
        # which steps are the top k follows from the weights the fit starts from.
        self.layer = torch.nn.Linear(8, 1)
        with torch.no_grad():
            g = torch.Generator().manual_seed(0)
            self.layer.weight.copy_(torch.randn(self.layer.weight.shape, generator=g))
            self.layer.bias.zero_()

    def training_step(self, batch: tuple, _: int) -> torch.Tensor:
        x, y = batch
        loss = torch.nn.functional.mse_loss(self.layer(x), y)
        self.log("train_loss", loss)
        return loss

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.SGD(self.parameters(), lr=0.01)


class StartedAt(Callback):
    def __init__(self) -> None:
        self.step = -1

    def on_train_start(self, trainer: L.Trainer, _: L.LightningModule) -> None:
        self.step = trainer.global_step


def fit(dirpath: str, max_steps: int) -> int:
    """The seeded fit, resumed with ``ckpt_path="last"``; the global step it started at."""
    g = torch.Generator().manual_seed(0)
    data = TensorDataset(torch.randn(64, 8, generator=g), torch.randn(64, 1, generator=g))
    started = StartedAt()
    checkpoints = ModelCheckpoint(dirpath=dirpath, save_top_k=TOP_K, save_last=True,
                                  every_n_train_steps=1, monitor="train_loss")
    trainer = L.Trainer(max_steps=max_steps, callbacks=[checkpoints, started], logger=False,
                        enable_progress_bar=False, enable_model_summary=False,
                        accelerator="cpu", devices=1)
    trainer.fit(Model(), DataLoader(data, batch_size=8), ckpt_path="last")
    assert trainer.global_step == max_steps
    return started.step


def stored(emu: Emulator, location: str) -> dict[str, set[str]]:
    """Every committed version of the artifact and the names of its files."""
    found = {}
    for v in versions(emu.api, emu.key, location):
        resp = requests.get(f"{emu.api}/versions/read", timeout=30,
                            params={"artifact": location[6:], "version": v["version"]},
                            headers={"Authorization": f"Bearer {emu.key}"})
        resp.raise_for_status()
        found[v["version"]] = {f["name"] for f in resp.json()["files"]}
    return found


def assert_bounded_as_on_disk(found: dict[str, set[str]], local: set[str], step: int) -> None:
    """The artifact keeps one version per checkpoint the local folder holds (a best one's
    step, and the latest for ``last.ckpt``), and their files at the top are the folder's."""
    latest = f"step-{step:08d}"
    best = {n for n in local if _STEP.search(n)}
    assert len(best) == TOP_K and "last.ckpt" in local and len(local) == TOP_K + 1, local
    expected = {f"step-{int(_STEP.search(n).group(1)):08d}" for n in best} | {latest}
    counts = f"{len(found)} versions, {sum(map(len, found.values()))} files: {found}"
    assert set(found) == expected, counts
    assert set().union(*found.values()) == local, counts
    for version, names in found.items():  # each holds its own checkpoint and its last.ckpt
        own = {n for n in best if int(_STEP.search(n).group(1)) == int(version[5:])}
        assert names == {"last.ckpt"} | own, counts


def test_top_3_with_save_last_every_step_keeps_what_local_disk_keeps_and_resumes(
        o41_env: Emulator, o41_location: str, tmp_path: Path) -> None:
    assert fit(str(tmp_path), STEPS) == 0
    assert fit(o41_location, STEPS) == 0
    local = {p.name for p in tmp_path.iterdir()}
    assert_bounded_as_on_disk(stored(o41_env, o41_location), local, STEPS)
    # The relaunch resumes from last.ckpt, at the step the first fit ended on.
    assert fit(str(tmp_path), STEPS + 5) == STEPS
    assert fit(o41_location, STEPS + 5) == STEPS
    local = {p.name for p in tmp_path.iterdir()}
    assert_bounded_as_on_disk(stored(o41_env, o41_location), local, STEPS + 5)


@pytest.mark.slow  # four DDP fits of 2 processes: 95-150 s at load 6-9 (the fast one: 5 s)
def test_ddp_top_3_with_save_last_every_step_keeps_what_local_disk_keeps_and_resumes(
        served_emulator: Emulator, o41_location: str, tmp_path: Path) -> None:
    args = ("--every", "1", "--top-k", str(TOP_K), "--monitor", "--devices", "2")
    for steps, resumed in ((STEPS, 0), (STEPS + 5, STEPS)):
        for where in (str(tmp_path), o41_location):
            run = start(served_emulator.client_env(), "lightning_fit.py", where,
                        "--steps", str(steps), *args)
            assert run.finish() == 0, run.output()
            # Both ranks print to one pipe: their lines may run into each other.
            started = re.findall(r"resumed-at (\d+)", run.output())
            assert started == [str(resumed)] * 2, run.output()
        local = {p.name for p in tmp_path.iterdir()}
        assert_bounded_as_on_disk(stored(served_emulator, o41_location), local, steps)
