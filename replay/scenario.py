"""The ``boxes:`` key of a scenario file: where each box runs and how it is preempted.

::

    boxes:
      - id: A
        place: aws/us-east-1            # cloud/region, or "unknown" (no SKYPILOT_CLUSTER_INFO)
        preempt:
          after_checkpoints: 3          # and/or after_seconds: 5.0 (whichever comes first)
          mode: stop                    # kill (default): SIGKILL | stop: SIGSTOP, a zombie
          resume_after: {box: B, checkpoints: 1}   # stop only: SIGCONT then (or {seconds: 2},
                                                   # or {box: B, calls: 1}: at B's first call)
      - id: B
        place: gcp/europe-west4
        preempt: {after_checkpoints: 3}
      - id: C
        place: azure/westeurope         # no preempt: runs the command to its end

Other top-level keys (``name``, ``description``, ``rules``, ``steps``) belong to the
conformance suite and are ignored here. The suite and this harness read the same files, kept
once in ``conformance/scenario_files`` (package data): a bundled scenario can be named
without a path (``spot-hop``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path
from typing import Any

import yaml

_PLACE = re.compile(r"^[a-z0-9][a-z0-9-]*/[a-z0-9][a-z0-9-]*$")
_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,31}$")
SKYPILOT_CLOUDS = {"aws": "AWS", "gcp": "GCP", "azure": "Azure"}


class ScenarioError(ValueError):
    """The scenario's ``boxes:`` cannot be run; the message says which box and key."""


@dataclass(frozen=True)
class ResumeAfter:
    """When a stopped box gets SIGCONT: after ``box`` made ``checkpoints`` (or ``calls``, API
    calls of any kind: ``calls: 1`` wakes the zombie as the relaunch begins, before the
    relaunch's first save), or ``seconds`` after the stop."""

    box: str | None = None
    checkpoints: int = 1
    seconds: float | None = None
    calls: int | None = None


@dataclass(frozen=True)
class Preempt:
    """How a box ends: SIGKILL, or SIGSTOP (a zombie, perhaps continued later)."""

    after_checkpoints: int | None = None
    after_seconds: float | None = None
    mode: str = "kill"
    resume_after: ResumeAfter | None = None


@dataclass(frozen=True)
class Box:
    """One launch of the command: an id, a place (``None`` = unknown), its preemption."""

    id: str
    place: str | None
    preempt: Preempt | None = None

    @property
    def cloud(self) -> str | None:
        return self.place.split("/")[0] if self.place else None

    def cluster_info(self) -> dict[str, str] | None:
        """The ``SKYPILOT_CLUSTER_INFO`` SkyPilot would set on this box."""
        if self.place is None:
            return None
        cloud, region = self.place.split("/")
        zone = {"aws": f"{region}a", "azure": "1"}.get(cloud, f"{region}-a")
        return {"cluster_name": f"replay-{self.id.lower()}",
                "cloud": SKYPILOT_CLOUDS.get(cloud, cloud.capitalize()),
                "region": region, "zone": zone}


@dataclass(frozen=True)
class Scenario:
    name: str
    boxes: tuple[Box, ...]
    path: Path | None = None

    def box(self, box_id: str) -> Box:
        return next(b for b in self.boxes if b.id == box_id)


def _number(where: str, value: Any, kind: type, minimum: float) -> Any:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < minimum:
        raise ScenarioError(f"{where} must be a number >= {minimum}, not {value!r}")
    if kind is int and not isinstance(value, int):
        raise ScenarioError(f"{where} must be an integer, not {value!r}")
    return kind(value)


def _keys(where: str, data: Any, allowed: set[str]) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise ScenarioError(f"{where} must be a mapping, not {data!r}")
    unknown = set(data) - allowed
    if unknown:
        raise ScenarioError(f"{where}: unknown key(s) {sorted(unknown)}; known: {sorted(allowed)}")
    return data


def _resume_after(where: str, data: Any, ids: list[str], own: int) -> ResumeAfter:
    data = _keys(where, data, {"box", "checkpoints", "calls", "seconds"})
    if ("box" in data) == ("seconds" in data):
        raise ScenarioError(f"{where} needs exactly one of box (with checkpoints or calls) "
                            "or seconds")
    if "checkpoints" in data and "calls" in data:
        raise ScenarioError(f"{where} needs one of checkpoints or calls, not both")
    if "seconds" in data:
        return ResumeAfter(seconds=_number(f"{where}.seconds", data["seconds"], float, 0))
    box = str(data["box"])
    if box not in ids[own + 1:]:
        raise ScenarioError(f"{where}.box {box!r} is not a box launched after this one")
    if "calls" in data:
        return ResumeAfter(box=box, calls=_number(f"{where}.calls", data["calls"], int, 1))
    return ResumeAfter(box=box, checkpoints=_number(f"{where}.checkpoints",
                                                    data.get("checkpoints", 1), int, 1))


def _preempt(where: str, data: Any, ids: list[str], own: int) -> Preempt:
    data = _keys(where, data, {"after_checkpoints", "after_seconds", "mode", "resume_after"})
    if "after_checkpoints" not in data and "after_seconds" not in data:
        raise ScenarioError(f"{where} needs after_checkpoints or after_seconds")
    mode = data.get("mode", "kill")
    if mode not in ("kill", "stop"):
        raise ScenarioError(f"{where}.mode must be kill or stop, not {mode!r}")
    if "resume_after" in data and mode != "stop":
        raise ScenarioError(f"{where}.resume_after needs mode: stop")
    return Preempt(
        after_checkpoints=(_number(f"{where}.after_checkpoints", data["after_checkpoints"], int, 1)
                           if "after_checkpoints" in data else None),
        after_seconds=(_number(f"{where}.after_seconds", data["after_seconds"], float, 0)
                       if "after_seconds" in data else None),
        mode=mode,
        resume_after=(_resume_after(f"{where}.resume_after", data["resume_after"], ids, own)
                      if "resume_after" in data else None),
    )


def parse_boxes(data: Any) -> tuple[Box, ...]:
    """Validate the ``boxes:`` list, naming the box and key of any mistake."""
    if not isinstance(data, list) or not data:
        raise ScenarioError("boxes must be a non-empty list")
    ids = [str(b.get("id")) if isinstance(b, dict) else "?" for b in data]
    boxes = []
    for i, raw in enumerate(data):
        where = f"boxes[{i}]"
        raw = _keys(where, raw, {"id", "place", "preempt"})
        box_id = str(raw.get("id", ""))
        if not _ID.match(box_id) or ids.count(box_id) > 1:
            raise ScenarioError(f"{where}.id {box_id!r} must be a unique short name")
        place = str(raw.get("place", "unknown")).lower()
        if place != "unknown" and not _PLACE.match(place):
            raise ScenarioError(f"{where}.place {place!r} must be cloud/region or unknown")
        preempt = (_preempt(f"{where}.preempt", raw["preempt"], ids, i)
                   if raw.get("preempt") is not None else None)
        boxes.append(Box(box_id, None if place == "unknown" else place, preempt))
    return tuple(boxes)


def load_scenario(path: str | Path) -> Scenario:
    """Read a scenario file's ``name`` and ``boxes``; every other key is left alone."""
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise ScenarioError(f"{path}: {exc}") from None
    if not isinstance(data, dict) or "boxes" not in data:
        raise ScenarioError(f"{path} has no boxes: key (the replay harness needs one)")
    try:
        boxes = parse_boxes(data["boxes"])
    except ScenarioError as exc:
        raise ScenarioError(f"{path}: {exc}") from None
    return Scenario(str(data.get("name") or path.stem), boxes, path)


def bundled_dir() -> Path:
    """The scenario files shipped with the conformance suite, which owns them."""
    return Path(str(files("conformance.scenario_files")))


def find_scenario(given: str) -> Path:
    """A scenario file by path, else by the name of a bundled one (``spot-hop``)."""
    path = Path(given)
    if path.is_file():
        return path
    bundled = bundled_dir() / f"{given.removesuffix('.yaml')}.yaml"
    if "/" not in given and bundled.is_file():
        return bundled
    names = ", ".join(sorted(p.stem for p in bundled_dir().glob("*.yaml")))
    raise ScenarioError(f"{given}: no such file, nor a bundled scenario ({names})")
