"""Ray Train V2 with ``storage_path="o41://P/N"`` fails at launch with one line naming the recipe.

Ray keeps a snapshot of its checkpoints that it rewrites in place, and a marker it writes at
launch, under ``storage_path``; immutable versions cannot hold them. So the launch is
refused before any training, in one line that names docs/fsspec.md's recipe (which runs
under Sybil: storage_path on local disk, checkpoints through ``fs.put``). The real Ray runs
in a subprocess (tests/support/trainers/ray_train_o41.py), on CPU.
"""

from __future__ import annotations

import importlib.util
import re
import secrets
from typing import TYPE_CHECKING

import pytest

from tests.support.trainer_runs import start, versions

if TYPE_CHECKING:
    from tests.support.client_fixtures import Emulator

pytest_plugins = ["tests.support.client_fixtures"]
pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("ray") is None or importlib.util.find_spec("torch") is None,
    reason="ray[train] is not installed (pip install -e '.[test]')")


@pytest.mark.slow  # a real Ray cluster starts: 15 s on 2 cores
def test_ray_train_storage_path_on_o41_is_refused_at_launch_naming_the_recipe(
        served_emulator: Emulator) -> None:
    artifact = f"tests/ray-{secrets.token_hex(4)}"
    trainer = start(served_emulator.client_env(), "ray_train_o41.py", artifact)
    assert trainer.finish() == 0, trainer.output()
    refused = re.findall(r"^refused (.*)$", trainer.output(), re.M)
    assert len(refused) == 2 and "trained" not in trainer.output().split(), trainer.output()
    for line in refused:
        assert line.startswith(f"o41://{artifact}")
        assert "Ray Train keeps files it rewrites in place" in line
        assert 'docs/fsspec.md, "Ray Train"' in line
    assert versions(served_emulator.api, served_emulator.key, f"o41://{artifact}") == []
