"""The ``pytest11`` entry point: registers the suite's plugin only when the suite is run.

Installing the project must not change anyone else's pytest run: a plugin that added
``--target`` to every run crashed projects whose own conftest defines ``--target``
(``ValueError: option dest 'target' already used``). So this module adds no option, marker,
hook or fixture of its own. Before pytest parses the command line it looks at what is being
collected, and only when that is this package (``pytest conformance``, ``pytest
conformance/tests/fence/test_fencing.py``, ``pytest --pyargs conformance``, or a checkout
root that holds it) does it register :mod:`conformance.plugin`, which brings the options.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest

__all__ = ["runs_suite"]

PACKAGE_DIR = Path(__file__).resolve().parent
PLUGIN_NAME = "o41_conformance_suite"


def _within(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def _module_dir(name: str) -> Path | None:
    """Where ``--pyargs NAME`` points, if NAME is this package or one of its modules."""
    if name.split(".", 1)[0] != PACKAGE_DIR.name:
        return None
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None or spec.origin is None:
        return None
    return Path(spec.origin).resolve().parent


def runs_suite(paths: list[str], pyargs: bool, invocation_dir: Path) -> bool:
    """Whether the collection arguments reach this package. A directory above it counts only
    in a checkout: an installed copy under a project's virtualenv is never collected."""
    if not paths:  # pytest's testpaths or the current directory: only from inside the suite
        return _within(invocation_dir.resolve(), PACKAGE_DIR)
    in_checkout = "site-packages" not in PACKAGE_DIR.parts
    for arg in paths:
        text = arg.split("::", 1)[0]
        if pyargs and (found := _module_dir(text)) is not None and _within(found, PACKAGE_DIR):
            return True
        path = (invocation_dir / text).resolve()
        if not path.exists():
            continue
        if _within(path, PACKAGE_DIR) or (in_checkout and PACKAGE_DIR.is_relative_to(path)):
            return True
    return False


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config, parser: Any, args: Any) -> None:
    ns = early_config.known_args_namespace
    paths = [str(p) for p in (getattr(ns, "file_or_dir", None) or [])]
    if runs_suite(paths, bool(getattr(ns, "pyargs", False)), early_config.invocation_params.dir):
        from conformance import plugin

        # Already there when given as `-p conformance.plugin`.
        if not early_config.pluginmanager.is_registered(plugin):
            early_config.pluginmanager.register(plugin, PLUGIN_NAME)
