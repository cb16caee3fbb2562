"""What an ``o41://`` path names: the artifact, a file of a version, or a file at the top.

::

    o41://P/N                            the artifact (its versions are its directories)
    o41://P/N/step-00000100/<file>       a file of a committed version
    o41://P/N/step-100/<file>            the same: a ``step-<digits>`` folder is that step
    o41://P/N/latest/<file>              the same in the latest version
    o41://P/N/<file>                     a file at the top, as Lightning writes them:
                                         ``epoch=0-step=100.ckpt`` is a file of step-00000100,
                                         ``last.ckpt`` one of the latest version

A folder ``step-<digits>`` names the version ``step-%08d``: torchtitan and most hand-written
loops write ``step-{step}`` without padding. Listings of the artifact name each version once,
as ``step-XXXXXXXX``; ``re.search(r"step-(\\d+)", name)`` reads the same step from either
spelling, and a path keeps the spelling it was given (``ls("o41://P/N/step-1")`` lists
``P/N/step-1/<file>``).

Files at the top are how a trainer written for ``s3://bucket/run/`` lays out a run
(Lightning's ``ModelCheckpoint`` writes ``epoch=E-step=S.ckpt`` and ``last.ckpt`` beside
each other). Each one belongs to a version: the step named in the file name, or, inside
o41's Lightning save, the trainer's global step.
"""

from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass

from o41.location import VERSION_RE, Location, version_name

# A version folder as users write it: "step-100" or "step-00000100" (ASCII digits only).
_STEP_FOLDER = re.compile(r"step-([0-9]{1,8})", re.ASCII)
# Lightning's default name is "epoch=0-step=100"; "step-100" and "step_100" read the same.
_STEP_IN_NAME = re.compile(r"(?<![A-Za-z0-9])step[=_-]([0-9]{1,8})(?![0-9])", re.ASCII)


@dataclass(frozen=True)
class O41Path:
    """A parsed path; ``version`` is ``None`` for the artifact itself or a file at its top."""

    artifact: str
    version: str | None
    name: str

    @property
    def at_top(self) -> bool:
        """A file directly under the artifact, outside any ``step-…`` or ``latest`` folder."""
        return self.version is None and bool(self.name)

    @property
    def url(self) -> str:
        tail = "/".join(p for p in (self.version, self.name) if p)
        return f"o41://{self.artifact}" + (f"/{tail}" if tail else "")


def strip_url(path: str | os.PathLike[str]) -> str:
    """``o41://P/N/x`` -> ``P/N/x``, as fsspec strips a protocol (also ``o41::``, and a
    trailing ``/``); and ``o41:/P/N/x``, which ``pathlib`` makes of a URL (Ray Train joins
    its ``storage_path`` with ``Path(...).as_posix()``)."""
    text = os.fspath(path)
    for prefix in ("o41://", "o41::", "o41:/"):
        if text.startswith(prefix):
            text = text[len(prefix):]
            break
    return text.rstrip("/")


def parse(stripped: str) -> O41Path:
    """Parse a path without its protocol; a malformed artifact is a ``FileNotFoundError``."""
    parts = [p for p in stripped.split("/") if p]
    if len(parts) < 2:
        raise FileNotFoundError(f"o41://{'/'.join(parts)}: not an artifact (o41://project/name)")
    try:
        artifact = Location.parse(f"o41://{parts[0]}/{parts[1]}").artifact
    except ValueError as exc:
        raise FileNotFoundError(str(exc)) from None
    if len(parts) == 2:
        return O41Path(artifact, None, "")
    head = parts[2]
    version = head if head == "latest" or VERSION_RE.match(head) else folder_version(head)
    if version is not None:
        return O41Path(artifact, version, "/".join(parts[3:]))
    return O41Path(artifact, None, "/".join(parts[2:]))


def folder_version(folder: str) -> str | None:
    """The version a folder ``step-<digits>`` names (``step-1`` -> ``step-00000001``)."""
    found = _STEP_FOLDER.fullmatch(folder)
    return None if found is None else version_name(int(found.group(1)))


def step_in_name(name: str) -> int | None:
    """The step a top-level file name carries (``epoch=0-step=100.ckpt`` -> 100), if any."""
    found = _STEP_IN_NAME.findall(name.rsplit("/", 1)[-1])
    return int(found[-1]) if found else None


def top_version(name: str, step: int | None) -> str:
    """The version a file written at the top goes into, or a ``ValueError`` saying why none."""
    step = step if step is not None else step_in_name(name)
    if step is None and _ray_train(name):
        raise ValueError(RAY_TRAIN)  # the caller names the artifact
    if step is None:
        example = name.rsplit("/", 1)[-1]
        raise ValueError("a file at the top of an artifact needs a step: write it into its "
                         f"step's folder (for step 100: step-100/{example}) or give it a "
                         "name with step=N in it")
    return version_name(step)


def outside_layout(path: O41Path) -> str:
    """The one line a write into a folder an artifact does not have gets; its hint is a
    path that works."""
    first = path.name.split("/", 1)[0]
    if _ray_train(path.name):
        return f"{path.url}: {RAY_TRAIN.replace('o41://P/N', f'o41://{path.artifact}')}"
    return (f"{path.url}: an o41 artifact holds versions (step-N/ folders, as step-100/ or "
            f"step-00000100/) and files at its top, not the folder {first}/: "
            f"{_layout_hint(path, first)}")


# Ray Train's own files under RunConfig(storage_path=): a marker it writes at launch, and a
# snapshot of its checkpoints it rewrites in place after every report.
_RAY_FILES = (".validate_storage_marker", "checkpoint_manager_snapshot.json")
RAY_TRAIN = ("Ray Train keeps files it rewrites in place (checkpoint_manager_snapshot.json) "
             "under RunConfig(storage_path=), and an o41 artifact holds immutable versions "
             "only: keep storage_path on a local or shared disk, and save each checkpoint "
             "from the train function with fs.put(local_dir, 'o41://P/N/step-N/', "
             "recursive=True) (docs/fsspec.md, \"Ray Train\")")


def _ray_train(name: str) -> bool:
    """A write of Ray Train's layout: its files, or any folder while Ray Train is loaded."""
    return name.rsplit("/", 1)[-1] in _RAY_FILES or "ray.train" in sys.modules


def _layout_hint(path: O41Path, first: str) -> str:
    root = f"o41://{path.artifact}"
    if first in ("lightning_logs", "checkpoints"):
        return (f"Trainer(default_root_dir='{root}') puts {first}/ there: keep "
                "default_root_dir (and the logger) local and pass "
                f"ModelCheckpoint(dirpath='{root}')")
    if re.fullmatch(r"step-[0-9]+", first, re.ASCII):  # step-123456789
        return "a step folder has 1 to 8 digits: step-99999999 is the last step"
    parts = path.name.split("/")
    deeper = next((i for i, p in enumerate(parts) if folder_version(p)), None)
    if deeper is not None:  # "checkpoint/step-1/.metadata": a checkpoint folder inside
        inner = "/".join(parts[:deeper])
        return (f"make {root} itself the checkpoint folder (not {root}/{inner}): write "
                f"{root}/{'/'.join(parts[deeper:])} instead")
    return f"write it into its step's folder, as {root}/step-100/{path.name} for step 100"


__all__ = ["O41Path", "folder_version", "outside_layout", "parse", "step_in_name", "strip_url",
           "top_version"]
