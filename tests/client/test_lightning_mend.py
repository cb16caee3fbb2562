"""What a Lightning fit into o41:// asks of the service 
(o41.adapters.lightning), without a trainer."""

from __future__ import annotations

import pytest

from o41.adapters.lightning import _check_dirpath, _resume_for


@pytest.mark.parametrize(("ckpt_path", "resume"), [
    ("last", "latest"),
    ("o41://exp/run/step-00000010/last.ckpt", "latest"),
    ("o41://exp/run/last.ckpt", "latest"),
    (None, None),
    ("/local/disk/epoch=0-step=5.ckpt", None),
    ("o41://exp/source/step-00000010/last.ckpt", "o41://exp/source/step-00000010"),
])
def test_a_fit_resumes_its_own_artifact_forks_another_or_starts_fresh(
        ckpt_path: str | None, resume: str | None) -> None:
    chosen = None if ckpt_path == "last" else ckpt_path
    if ckpt_path == "last":
        chosen = "o41://exp/run/step-00000010/last.ckpt"  # what "last" resolves to
    assert _resume_for("o41://exp/run", chosen) == resume


def test_a_fork_from_another_artifact_names_a_version() -> None:
    with pytest.raises(ValueError, match="forks from a version"):
        _resume_for("o41://exp/run", "o41://exp/source/latest/last.ckpt")


@pytest.mark.parametrize("dirpath", ["o41://exp/run/checkpoints", "o41://exp/run/step-00000001"])
def test_dirpath_below_the_artifact_is_refused_at_launch_naming_the_artifact(
        dirpath: str) -> None:
    with pytest.raises(ValueError, match=r"is its artifact, o41://exp/run;"):
        _check_dirpath(dirpath)
    _check_dirpath("o41://exp/run")
