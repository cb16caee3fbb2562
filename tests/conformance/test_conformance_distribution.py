"""What ``pip install ".[conformance]"`` gives an implementer: the suite, not the mutation
tooling that measures it (docs/architecture.md says why). The mutants stay in the checkout,
where ``python -m conformance.mutants`` runs them; nothing the suite runs may need them."""

from __future__ import annotations

import ast
import subprocess
import sys
import tomllib
from pathlib import Path

from setuptools import find_namespace_packages

from tests.support.deadlines import HANG_GUARD

ROOT = Path(__file__).resolve().parents[2]
SUITE = ROOT / "conformance"


def _suite_modules() -> list[str]:
    return sorted(
        "conformance." + ".".join(p.relative_to(SUITE).with_suffix("").parts)
        for p in SUITE.rglob("*.py")
        if "mutants" not in p.relative_to(SUITE).parts and p.name != "__init__.py"
    )


def test_the_wheel_leaves_the_mutation_tooling_out() -> None:
    tool = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    find = tool["packages"]["find"]
    packages = find_namespace_packages(str(ROOT), include=find["include"], exclude=find["exclude"])
    assert "conformance" in packages and not [p for p in packages if "mutants" in p]
    # Files of an excluded subpackage would still ship as package data of its parent.
    assert tool["exclude-package-data"]["conformance"] == ["mutants/*"]


def test_no_module_of_the_suite_imports_the_mutants() -> None:
    offenders = []
    for path in SUITE.rglob("*.py"):
        if "mutants" in path.relative_to(SUITE).parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            if any(n.startswith("conformance.mutants") for n in names):
                offenders.append(str(path.relative_to(ROOT)))
    assert not offenders


def test_every_suite_module_imports_without_the_mutants() -> None:
    code = ("import importlib, sys; sys.modules['conformance.mutants'] = None; "
            f"[importlib.import_module(m) for m in {_suite_modules()!r}]; print('ok')")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, timeout=HANG_GUARD)
    assert done.stdout.strip() == "ok", done.stderr[-2000:]
