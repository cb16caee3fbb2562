"""The run's target, made once at session start: options read, emulator spawned, probe passed.

``--target spawn`` starts our emulator with a config that holds a read-only key and a
prefix-scoped key, then hands those keys to the suite exactly as ``--read-key`` and
``--scoped-key`` would for a URL target: the key-scope tests run the same code either way.
"""

from __future__ import annotations

import os
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from conformance.client import normalize_base
from conformance.env import Env
from conformance.env import ScopedKey
from conformance.model import Topology
from conformance.shown import Secrets
from conformance.spawn import SpawnedEmulator
from conformance.spawn import SpawnError
from conformance.spawn import emulator_config
from conformance.target import TargetError
from conformance.target import probe

__all__ = [
    "COLLECTOR",
    "ENV",
    "EXPIRY",
    "NAMES",
    "SECRETS",
    "SECRET_ENV",
    "SEED",
    "SPAWN_READ_KEY",
    "SPAWN_SCOPED_KEY",
    "TRAIL",
    "RunNames",
    "launch",
    "open_target",
    "run_names",
    "secret",
]

SPAWN_READ_KEY = "ak_conformance_reader"
SPAWN_SCOPED_KEY = "ak_conformance_scoped"


#: Where the plugin keeps the run's state on the pytest config (and items, for TRAIL).
COLLECTOR = pytest.StashKey[Any]()
ENV = pytest.StashKey[Env]()
NAMES = pytest.StashKey["RunNames"]()
SEED = pytest.StashKey[int]()
TRAIL = pytest.StashKey[Any]()
SECRETS = pytest.StashKey[Secrets]()
#: The expiry target of a spawn run, launched at session start (see :func:`open_target`).
EXPIRY = pytest.StashKey[SpawnedEmulator]()

#: Each key option and the environment variable it defaults to: a program running the suite
#: (the mutant and legal tables) hands keys over there, never on the command line, where
#: ``ps`` shows them to every user of the machine.
SECRET_ENV = {
    "api_key": "O41_ARTIFACTS_API_KEY",
    "read_key": "O41_CONFORMANCE_READ_KEY",
    "scoped_key": "O41_CONFORMANCE_SCOPED_KEY",
    "expiry_api_key": "O41_CONFORMANCE_EXPIRY_API_KEY",
}


def spawn_write_prefix(project: str) -> str:
    """The write grant of a spawned emulator's scoped key: a whole project of its own,
    ``<project>-w/``, so that names beside it (``<project>-w2x/...``, the grant matched
    without its slash) are tested as well as names beside the run's own project."""
    return f"{project}-w/"


def secret(config: Any, name: str) -> str | None:
    """A key option's value: the command line's, else its environment variable's."""
    return config.getoption(name) or os.environ.get(SECRET_ENV[name]) or None


@dataclass(frozen=True)
class RunNames:
    """The run's project and the tag that keeps its names apart from earlier runs'."""

    prefix: str
    tag: str


def run_names(target: str | None, given: str | None) -> RunNames:
    """A spawned emulator is empty, so its run needs no random tag and its names are the
    same every run. A URL target keeps earlier runs' artifacts, so a random tag keeps the
    names of this run fresh (in the project name, or after each name with ``--prefix``)."""
    tag = "" if target == "spawn" else secrets.token_hex(4)
    if given:
        return RunNames(given, tag)
    return RunNames(f"conf-{tag or 'spawn'}", "")


def _opt(config: Any, name: str) -> Any:
    return config.getoption(name)


def spawn(
    config: Any, workdir: Path, prefix: str, url_lifetime: int | None = None,
    own_database: bool = False,
) -> SpawnedEmulator:
    """Start one emulator with the suite's keys; stopped by the config's cleanup."""
    proc = launch(config, workdir, prefix, url_lifetime, own_database)
    proc.wait_ready()
    return proc


def launch(
    config: Any, workdir: Path, prefix: str, url_lifetime: int | None = None,
    own_database: bool = False,
) -> SpawnedEmulator:
    """:func:`spawn` without waiting for the emulator to answer."""
    proc = SpawnedEmulator(
        workdir,
        faults=_opt(config, "emulator_fault"),
        config=emulator_config(
            SPAWN_READ_KEY, SPAWN_SCOPED_KEY, spawn_write_prefix(prefix), f"{prefix}/r-",
            url_lifetime
        ),
        command=_opt(config, "emulator_command"),
        own_database=own_database,
    )
    config.add_cleanup(proc.stop)
    proc.launch()
    return proc


def _one_line(exc: SpawnError) -> str:
    lines = [ln for ln in str(exc).splitlines() if ln.strip()]
    return lines[0] + (f" ... {lines[-1].strip()}" if len(lines) > 1 else "")


def open_target(
    config: Any, names: RunNames, seed: int, workdir: Path, *, expiry: bool = False
) -> Env:
    """The session's Env, with the target started (spawn) and probed; with ``expiry`` (a
    selected test needs the expiry target) and spawn, the expiry target launched beside it.
    Raises TargetError with one line when the target cannot be judged."""
    target = str(_opt(config, "target"))
    key = secret(config, "api_key")
    read_key = secret(config, "read_key")
    scoped_arg, read_prefix = secret(config, "scoped_key"), _opt(config, "scoped_read_prefix")
    spawned = target == "spawn"
    if spawned:
        if expiry and not _opt(config, "expiry_target"):
            # The expiry target comes up while the main one does, not when its first
            # test asks for it (o41_expiring_env waits for it then).
            expiry_dir = workdir / "expiry"
            expiry_dir.mkdir()
            config.stash[EXPIRY] = launch(config, expiry_dir, names.prefix,
                                          _opt(config, "emulator_url_lifetime"),
                                          own_database=True)
        try:
            proc = spawn(config, workdir, names.prefix)
        except SpawnError as exc:
            raise TargetError(f"--target spawn: {_one_line(exc)}") from exc
        target = proc.url
        # Not $O41_ARTIFACTS_API_KEY: that is some other target's key, not our emulator's.
        key = _opt(config, "api_key") or proc.key or "ak_local"
        read_key = read_key or SPAWN_READ_KEY
        if not scoped_arg:
            scoped_arg = f"{SPAWN_SCOPED_KEY}={spawn_write_prefix(names.prefix)}"
            read_prefix = f"{names.prefix}/r-"
    secrets = config.stash.get(SECRETS, None)
    if secrets is not None:
        for value in (key, read_key, (scoped_arg or "").partition("=")[0]):
            secrets.add(value)
    fallback = _opt(config, "fallback")
    has_fallback = (fallback or "").lower() != "none"
    env = Env(
        base=normalize_base(target),
        key=key,
        topology=Topology.parse(_opt(config, "places"), fallback if has_fallback else None),
        prefix=names.prefix,
        read_key=read_key,
        scoped=ScopedKey.parse(scoped_arg, read_prefix) if scoped_arg else None,
        spawned=spawned,
        faults=tuple(_opt(config, "emulator_fault")),
        max_url_wait=_opt(config, "max_url_wait"),
        max_put_bytes=_opt(config, "max_put_bytes"),
        seed=seed,
        run_tag=names.tag,
        has_fallback=has_fallback,
    )
    probe(env.base, env.key, env.artifact("probe", count=False))
    return env
