"""Scenario replays: YAML files of steps, each with its expected outcome.

Format (top level): ``name``, ``description``, ``rules`` (ids, the test's markers),
optional ``needs_locations`` (skipped when the target lacks one) and ``steps``. Any other
top-level key (e.g. ``boxes:`` of the training-replay harness) belongs to someone else and
is ignored. A step is one action key with its arguments, an optional ``expect`` mapping and
an optional ``rule`` that overrides which rule a failing expectation is charged to::

    - open: {box: B, place: gcp/europe-west4, resume: latest}
      expect: {fenced: A, resume_from: step-00000200, cross_cloud: true}

Actions and their expectation keys are listed in ``EXPECT``; docs/conformance.md explains
them. An ``open`` may name a ``holder`` label (boxes opened with one label share a holder
id, as SkyPilot's relaunches share ``SKYPILOT_TASK_ID``), a ``key`` (``none``, ``unknown``,
``read``, ``scoped``) and a ``place`` given as a mapping, sent as written (invalid places).
An ``upload`` may ``put: none | partial | corrupt`` to cut a commit half way. Rule ids in
``rules`` and a step's ``rule`` may be clause ids (``FENCE-2.b``).

Scenarios load from ``conformance/scenario_files`` (package data, the one copy the
replay harness reads too), or from ``--scenarios DIR``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from typing import Any

import yaml

from conformance.rules import is_known

__all__ = [
    "EXPECT",
    "Scenario",
    "ScenarioError",
    "Step",
    "bundled_dir",
    "default_dir",
    "load_scenario",
    "load_scenarios",
    "parse_size",
]

#: Each action and the expectation keys it understands.
EXPECT: dict[str, set[str]] = {
    "open": {
        "status",
        "code",
        "resume_from",
        "fenced",
        "write_location",
        "write_route",
        "route",
        "cross_cloud",
        "warning",
    },
    "race_open": {"distinct_epochs"},
    "checkpoint": {"status", "code", "location", "route"},
    "upload": {"status", "code", "location", "route"},
    "commit": {"status", "code", "location"},
    "read": {"status", "code", "version", "bytes", "location", "route", "cross_cloud"},
    "list": {"versions", "locations"},
    "artifact": {"latest", "versions", "holder", "forked_from", "epoch"},
}
#: Each action's argument keys (``box`` names a box; ``artifact`` an alias of this scenario).
ARGS: dict[str, set[str]] = {
    "open": {"box", "artifact", "place", "resume", "holder", "key"},
    "race_open": {"boxes", "artifact", "place", "resume"},
    "checkpoint": {"box", "version", "files"},
    "upload": {"box", "version", "files", "as", "put"},
    "commit": {"box", "upload"},
    "read": {"box", "artifact", "place", "version", "parts"},
    "list": {"artifact"},
    "artifact": {"artifact"},
}
STATUS_OF = {
    "unauthenticated": 401,
    "forbidden": 403,
    "not_found": 404,
    "invalid_argument": 400,
    "has_checkpoints": 409,
    "not_empty": 409,
    "fenced": 409,
    "version_exists": 409,
    "not_after_latest": 409,
    "incomplete": 409,
    "is_latest": 409,
    "payload_too_large": 413,
}
_SIZE = re.compile(r"(\d+)\s*(B|KB|MB|KiB|MiB)?")
_UNITS = {None: 1, "B": 1, "KB": 1000, "MB": 1000**2, "KiB": 1024, "MiB": 1024**2}


class ScenarioError(ValueError):
    """A scenario file does not follow the format (reported at collection, with the file)."""


def parse_size(value: int | str) -> int:
    """``4096``, ``"64KB"``, ``"2MB"``, ``"1MiB"`` -> bytes."""
    if isinstance(value, int):
        return value
    m = _SIZE.fullmatch(str(value).strip())
    if not m:
        raise ScenarioError(f"not a size: {value!r}")
    return int(m.group(1)) * _UNITS[m.group(2)]


@dataclass(frozen=True)
class Step:
    index: int
    action: str
    args: dict[str, Any]
    expect: dict[str, Any]
    rule: str | None = None

    @property
    def text(self) -> str:
        args = ", ".join(f"{k}: {v}" for k, v in self.args.items())
        exp = ", ".join(f"{k}: {v}" for k, v in self.expect.items())
        return f"{self.action} {{{args}}}" + (f" expect {{{exp}}}" if exp else "")


@dataclass(frozen=True)
class Scenario:
    name: str
    description: str
    rules: tuple[str, ...]
    steps: tuple[Step, ...]
    needs_locations: tuple[str, ...] = ()
    path: Path | None = field(default=None, compare=False)


def _step(i: int, raw: Any, where: str) -> Step:
    if not isinstance(raw, dict):
        raise ScenarioError(f"{where}: step {i} is not a mapping")
    actions = [k for k in raw if k in EXPECT]
    extra = set(raw) - set(actions) - {"expect", "rule"}
    if len(actions) != 1 or extra:
        raise ScenarioError(
            f"{where}: step {i} needs exactly one action of {sorted(EXPECT)}; got {sorted(raw)}"
        )
    action = actions[0]
    args = raw[action] or {}
    expect = raw.get("expect") or {}
    if not isinstance(args, dict) or not isinstance(expect, dict):
        raise ScenarioError(f"{where}: step {i} arguments and expect must be mappings")
    bad = (set(args) - ARGS[action]) | (set(expect) - EXPECT[action])
    if bad:
        raise ScenarioError(f"{where}: step {i} ({action}) has unknown keys {sorted(bad)}")
    if "code" in expect and expect["code"] not in STATUS_OF:
        raise ScenarioError(f"{where}: step {i} expects unknown code {expect['code']!r}")
    if int(expect.get("status", 200)) >= 400 and "code" not in expect:
        raise ScenarioError(f"{where}: step {i} expects an error status without a code")
    rule = raw.get("rule")
    if rule is not None and not is_known(rule):
        raise ScenarioError(f"{where}: step {i} names unknown rule {rule!r}")
    return Step(i, action, dict(args), dict(expect), rule)


#: PyYAML's safe loader, in C when PyYAML was built with libyaml: the mutant table collects
#: the scenarios in most of its ~500 suite runs, and the pure-Python loader took ~0.2 s of
#: each (the same documents, the same Python objects).
SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load_scenario(path: Path) -> Scenario | None:
    """One scenario file; None when it has no ``steps`` (a file only other tools use)."""
    data = yaml.load(path.read_text(), Loader=SAFE_LOADER) or {}
    if not isinstance(data, dict):
        raise ScenarioError(f"{path}: top level must be a mapping")
    if "steps" not in data:
        return None
    rules = tuple(data.get("rules") or ())
    bad = [r for r in rules if not is_known(r)]
    if bad or not rules:
        raise ScenarioError(f"{path}: rules must be contract rule or clause ids, got {list(rules)}")
    steps = tuple(_step(i, s, str(path)) for i, s in enumerate(data["steps"] or [], start=1))
    if not steps:
        raise ScenarioError(f"{path}: no steps")
    return Scenario(
        name=str(data.get("name") or path.stem),
        description=str(data.get("description") or "").strip(),
        rules=rules,
        steps=steps,
        needs_locations=tuple(data.get("needs_locations") or ()),
        path=path,
    )


def bundled_dir() -> Path:
    return Path(__file__).resolve().parent / "scenario_files"


def default_dir() -> Path:
    """The bundled scenario files: one copy, shared with the replay harness."""
    return bundled_dir()


def load_scenarios(directory: Path | None = None) -> list[Scenario]:
    """Every ``*.yaml`` scenario of the directory that has steps, sorted by file name."""
    found = []
    for path in sorted((directory or default_dir()).glob("*.yaml")):
        scenario = load_scenario(path)
        if scenario is not None:
            found.append(scenario)
    return found
