"""``UPath("o41://...")`` finds o41's own class through its entry point, and warns of nothing.

universal-pathlib looks a protocol up in its ``universal_pathlib.implementations`` entry
points; the test runs a fresh interpreter with warnings as errors, with the entry point
declared in ``pyproject.toml`` on its path (as ``pip install`` writes it), so it holds
whether or not this checkout's metadata is the installed one.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.support.deadlines import HANG_GUARD
from tests.support.trainer_runs import versions

if TYPE_CHECKING:
    from tests.support.client_fixtures import Emulator

pytest_plugins = ["tests.support.client_fixtures"]
pytest.importorskip("upath", reason="universal-pathlib is not installed (pip install -e '.[test]')")
REPO = Path(__file__).resolve().parents[2]
GROUP = "universal_pathlib.implementations"

SCRIPT = """
import sys, warnings
warnings.simplefilter("error")
from upath import UPath
root = UPath(sys.argv[1])
step = root / "step-1"
(step / "model.pt").write_bytes(b"weights")
(step / "optim.pt").write_bytes(b"moments")  # the same step: one version of both files
assert type(step).__module__ == "o41.adapters.upath", type(step)
assert (root / "step-00000001" / "model.pt").read_bytes() == b"weights"
assert [p.name for p in step.iterdir()] == ["model.pt", "optim.pt"]
assert str(step / "model.pt") == sys.argv[1] + "/step-1/model.pt"
assert (step / "model.pt").exists() and not (root / "step-2" / "model.pt").exists()
print("ok")
"""


def declared_entry_point() -> str:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    return project["entry-points"][GROUP]["o41"]


def test_upath_entry_point_names_the_o41_class() -> None:
    module, _, name = declared_entry_point().partition(":")
    assert (module, name) == ("o41.adapters.upath", "O41UPath")


def test_upath_of_an_o41_url_writes_reads_and_lists_without_a_warning(
        served_emulator: Emulator, o41_location: str, tmp_path: Path) -> None:
    info = tmp_path / "o41_upath_entry-0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: o41-upath-entry\nVersion: 0\n")
    (info / "entry_points.txt").write_text(f"[{GROUP}]\no41 = {declared_entry_point()}\n")
    env = served_emulator.client_env(PYTHONPATH=os.pathsep.join([str(tmp_path), str(REPO)]))
    done = subprocess.run([sys.executable, "-c", SCRIPT, o41_location], env=env, cwd=REPO,
                          capture_output=True, text=True, timeout=HANG_GUARD)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok" and "not explicitly implemented" not in done.stderr
    found = versions(served_emulator.api, served_emulator.key, o41_location)
    assert [(v["step"], v["size"]) for v in found] == [(1, len(b"weights" + b"moments"))]
