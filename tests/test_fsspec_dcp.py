"""docs/fsspec.md's torch.distributed.checkpoint example, run when torch is installed.

torch is not a dependency of this project (it is a 1 GB install); the test is skipped
without it, and says so.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from client_fixtures import Emulator

pytest_plugins = ["client_fixtures"]
torch = pytest.importorskip("torch", reason="torch is not installed (it is not a dependency "
                            "of this project): the DCP example of docs/fsspec.md is not run")


@pytest.mark.filterwarnings("ignore:torch.distributed is disabled:UserWarning")
def test_dcp_fsspec_writer_commits_one_version_and_reader_loads_it(o41_env: Emulator,
                                                                    o41_location: str) -> None:
    import fsspec
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint._fsspec_filesystem import FsspecReader, FsspecWriter

    state = {"w": torch.arange(1000, dtype=torch.float32), "step": torch.tensor(100)}
    checkpoint = f"{o41_location}/step-00000100"
    dcp.save(state, storage_writer=FsspecWriter(checkpoint))  # .metadata last: the commit

    fs = fsspec.filesystem("o41", skip_instance_cache=True)
    assert [n.rsplit("/", 1)[1] for n in fs.ls(o41_location, detail=False)] == ["step-00000100"]
    assert fs.exists(f"{checkpoint}/.metadata")

    loaded = {"w": torch.zeros(1000), "step": torch.tensor(0)}
    dcp.load(loaded, storage_reader=FsspecReader(f"{o41_location}/latest"))
    assert torch.equal(loaded["w"], state["w"]) and int(loaded["step"]) == 100
