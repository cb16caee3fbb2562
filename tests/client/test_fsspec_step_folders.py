"""``step-N`` folders without zero padding, as torchtitan and hand-written loops write them.

A folder ``step-<digits>`` under an artifact is the version ``step-%08d`` for writes, reads
and listings; the artifact's listing names each version once, padded, and the step a
trainer parses from it (``re.search(r"step-(\\d+)", name)``) is the step it wrote.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import fsspec
import pytest

import o41
from o41.paths import outside_layout, parse
from tests.support.client_helpers import make_fs

if TYPE_CHECKING:
    from tests.support.client_fixtures import Emulator

pytest_plugins = ["tests.support.client_fixtures"]
torch = pytest.importorskip("torch", reason="torch is not installed (pip install -e '.[test]')")

import torch.distributed.checkpoint as dcp  # noqa: E402


@pytest.mark.parametrize(("folder", "version"), [
    ("step-1", "step-00000001"), ("step-0", "step-00000000"), ("step-100", "step-00000100"),
    ("step-00000100", "step-00000100"), ("step-99999999", "step-99999999")])
def test_step_folder_without_padding_names_the_padded_version(folder: str,
                                                              version: str) -> None:
    assert parse(f"p/n/{folder}/.metadata").version == version


@pytest.mark.parametrize("folder", ["step-123456789", "step-1a", "step-", "step-٥", "Step-1"])
def test_other_step_like_folders_are_not_versions(folder: str) -> None:
    assert parse(f"p/n/{folder}/x").version is None


def test_nested_checkpoint_folder_hint_names_a_path_that_works() -> None:
    message = outside_layout(parse("p/n/checkpoint/step-1/.metadata"))
    assert "write o41://p/n/step-1/.metadata instead" in message
    assert "XXXXXXXX" not in message


def test_version_location_without_padding_is_the_padded_version() -> None:
    assert str(o41.Location.parse("o41://p/n/step-7")) == "o41://p/n/step-00000007"
    with pytest.raises(o41.ConfigError, match="step-100 or step-00000100"):
        o41.Location.parse("o41://p/n/step-x")


def test_dcp_save_into_step_1_is_version_step_00000001_and_loads_back(
        o41_env: Emulator, o41_location: str) -> None:
    fs = fsspec.filesystem("o41")
    state = {"w": torch.arange(8, dtype=torch.float32)}
    dcp.save(state, checkpoint_id=f"{o41_location}/step-1")
    dcp.save({"w": state["w"] + 1}, checkpoint_id=f"{o41_location}/step-2")
    names = [p.rsplit("/", 1)[-1] for p in fs.ls(o41_location, detail=False)]
    assert names == ["step-00000001", "step-00000002"]
    assert fs.isdir(f"{o41_location}/step-1")
    assert fs.isfile(f"{o41_location}/step-1/.metadata")
    inside = fs.ls(f"{o41_location}/step-1", detail=False)
    assert f"{o41_location[len('o41://'):]}/step-1/.metadata" in inside
    loaded = {"w": torch.zeros(8)}
    dcp.load(loaded, checkpoint_id=f"{o41_location}/step-1")
    assert torch.equal(loaded["w"], state["w"])


def test_last_step_found_as_torchtitan_finds_it(served_emulator: Emulator,
                                                o41_location: str) -> None:
    """torchtitan's ``_find_load_step``: the basenames of ``fs.ls``, ``step-(\\d+)``, then a
    ``.metadata`` inside ``step-{n}``."""
    fs = make_fs(served_emulator)
    for step in (5, 10, 20):
        fs.pipe_file(f"{o41_location}/step-{step}/.metadata", b"m")
    steps = [int(m.group(1)) for p in fs.ls(o41_location, detail=False)
             if (m := re.search(r"step-(\d+)", p.rsplit("/", 1)[-1]))]
    last = max(steps)
    assert last == 20 and fs.isfile(f"{o41_location}/step-{last}/.metadata")


def test_write_into_a_committed_unpadded_step_is_refused_with_its_padded_name(
        served_emulator: Emulator, o41_location: str) -> None:
    fs = make_fs(served_emulator)
    fs.pipe_file(f"{o41_location}/step-3/model.pt", b"m")
    fs.commit_pending()
    with pytest.raises(o41.VersionExists, match="step-00000003"):
        fs.pipe_file(f"{o41_location}/step-3/model.pt", b"again")
    assert fs.cat_file(f"{o41_location}/step-00000003/model.pt") == b"m"
