"""The ``o41_emulator`` pytest fixture, for any project that installs the package.

Loaded by pytest through the package's ``pytest11`` entry point in every run of every
project that has it installed, so it adds fixtures only (no option, hook or marker) and
imports nothing heavier than pytest until a test asks for the fixture::

    def test_checkpoint_round_trip(o41_emulator):
        with fsspec.open("o41://team/run-1/step-00000001/model.bin", "wb") as f:
            f.write(b"weights")

One emulator (``emulator.ThreadedEmulator``, in a thread of the test process) serves the
whole session; each test gets it reset, with the environment the o41 client, fsspec's
``o41://`` and plain ``requests`` code read pointed at it, restored afterwards.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from .threaded import ThreadedEmulator

__all__ = ["DEFAULT_PLACE", "o41_emulator", "o41_emulator_server"]

#: Where the fixture says the test runs (``O41_PLACE``), so nothing is billed cross-cloud.
DEFAULT_PLACE = "aws/us-east-1"

#: What the fixture sets for each test; each is put back as it was when the test ends.
URL_VAR, KEY_VAR, PLACE_VAR = "O41_ARTIFACTS_API_URL", "O41_ARTIFACTS_API_KEY", "O41_PLACE"
#: Where the client's processes of one job share their opens (tokens) of each artifact: a
#: folder of the test's own, so no test finds an open of a name that an earlier one made.
JOBS_VAR = "O41_JOBS_DIR"


def _reset_client_state() -> None:
    """Forget what the o41 client of this process kept from an earlier test, whose artifacts
    a reset removed: fsspec's cached ``o41://`` filesystems and the client's launches."""
    try:
        import fsspec

        fs_class = fsspec.get_filesystem_class("o41")
    except (ImportError, ValueError):  # the client is not installed: nothing to forget
        return
    fs_class.clear_instance_cache()
    _forget_launches()


def _forget_launches() -> None:
    """End the launches of the client (one per artifact the process opened through
    ``o41://``): kept, the next test's open of the same name would write with a token the
    reset forgot. Only when the client was loaded: nothing was opened otherwise."""
    if "o41.writing.registry" in sys.modules:
        import o41

        o41.forget_launches()


@pytest.fixture(scope="session")
def o41_emulator_server() -> Iterator[ThreadedEmulator]:
    """The session's one emulator, served from a thread of this process (its data in a
    temporary folder removed at the end); use ``o41_emulator`` in tests, which resets it and
    points the environment at it."""
    from .threaded import ThreadedEmulator

    with ThreadedEmulator() as emu:
        yield emu


@pytest.fixture
def o41_emulator(o41_emulator_server: ThreadedEmulator) -> Iterator[ThreadedEmulator]:
    """An empty emulator for this test, with ``O41_ARTIFACTS_API_URL`` and
    ``O41_ARTIFACTS_API_KEY`` set for it, ``O41_PLACE`` (``aws/us-east-1``) unless the run
    says where it is already (``O41_PLACE`` or ``SKYPILOT_CLUSTER_INFO``), and the client's
    shared opens (``O41_JOBS_DIR``) in a folder of the test's own."""
    emu = o41_emulator_server
    emu.reset()
    emu.clear_chaos()  # an earlier test's rules would fail this one's calls
    _reset_client_state()
    saved = {name: os.environ.get(name) for name in (URL_VAR, KEY_VAR, PLACE_VAR, JOBS_VAR)}
    jobs = tempfile.mkdtemp(prefix="o41-jobs-")  # private to the user (0700), as it must be
    os.environ[URL_VAR] = emu.api_url
    os.environ[KEY_VAR] = emu.key
    os.environ[JOBS_VAR] = jobs
    if not (os.environ.get(PLACE_VAR) or os.environ.get("SKYPILOT_CLUSTER_INFO")):
        os.environ[PLACE_VAR] = DEFAULT_PLACE
    try:
        yield emu
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        _reset_client_state()
        shutil.rmtree(jobs, ignore_errors=True)
