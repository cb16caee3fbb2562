"""What installing the project brings: the client alone stays small, every import is declared.

The root distribution serves, replays and carries the client (the README's first command);
`clients/o41` ships the same `o41` package with the client's dependencies only, for a trainer
image. docs/architecture.md says why there are two.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import tomllib
from pathlib import Path

from tests.support.deadlines import HANG_GUARD

ROOT = Path(__file__).resolve().parent.parent
OWN = {"emulator", "conformance", "replay", "o41", "tests", "bench"}
# Import names that differ from the distribution that provides them.
PROVIDED_BY = {"yaml": "pyyaml", "werkzeug": "flask", "markupsafe": "flask",
               "upath": "universal-pathlib"}
SERVER_AND_TEST_STACK = {"flask", "werkzeug", "gunicorn", "minio", "pytest", "hypothesis",
                         "sqlalchemy", "psycopg"}


# Modules that only the library they plug into imports, through its entry point, so they
# may import that library: each extra of both distributions declares it.
PLUGINS = {"upath.py": "upath"}  # module name: the extra that declares its library
# pytest11 plugins outside the suite: only pytest loads them, so pytest is there already
PYTEST_PLUGINS = {"pytest_fixture.py"}


def third_party_imports(package: Path, *, plugins: bool = False) -> set[str]:
    """Distributions the package's modules import, lazily imported ones included (not those
    under ``if TYPE_CHECKING:``); those of its plugin modules (``PLUGINS``) only, with
    ``plugins``."""
    found = set()
    for path in package.rglob("*.py"):
        if (path.name in PLUGINS and package.name == "o41") != plugins:
            continue
        tree = ast.parse(path.read_text(), str(path))
        typing_only = {id(inner) for block in ast.walk(tree) if isinstance(block, ast.If)
                       and isinstance(block.test, ast.Name) and block.test.id == "TYPE_CHECKING"
                       for stmt in block.body for inner in ast.walk(stmt)}
        for node in ast.walk(tree):
            if id(node) in typing_only:  # a type, never loaded at run time
                continue
            if isinstance(node, ast.Import):
                tops = [alias.name.split(".")[0] for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                tops = [node.module.split(".")[0]]
            else:
                continue
            if path.name in PYTEST_PLUGINS:
                tops = [t for t in tops if t != "pytest"]
            found.update(t for t in tops if t not in sys.stdlib_module_names and t not in OWN)
    return {PROVIDED_BY.get(t, t) for t in found}


def declared(requirements: list[str]) -> set[str]:
    return {re.split(r"[\[<>=!~;\s]", r, maxsplit=1)[0].lower() for r in requirements}


def pyproject(path: Path) -> dict:
    return tomllib.loads(path.read_text())


def loaded(module: str, watched: set[str]) -> list[str]:
    """Which of `watched` a fresh interpreter has loaded after importing `module`."""
    code = (f"import {module}, sys; "
            f"print(sorted(m for m in {sorted(watched)!r} if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                         text=True, check=True, timeout=HANG_GUARD)
    return ast.literal_eval(out.stdout.strip())


def test_importing_the_client_loads_no_server_or_test_stack():
    assert loaded("o41", SERVER_AND_TEST_STACK | {"emulator", "conformance", "replay"}) == []


def test_replay_harness_and_cli_load_no_flask_app():
    """The harness starts the emulator as a program; the CLI loads the app only to serve;
    the pytest fixture, loaded in every run of every project that installs the package, only
    when a test asks for it."""
    for module in ("replay.command", "emulator.run.cli", "emulator.run.served"):
        assert loaded(module, SERVER_AND_TEST_STACK | {"emulator.web.app"}) == [], module
    # pytest is there already when pytest loads it
    assert loaded("emulator.run.pytest_fixture", SERVER_AND_TEST_STACK | {"emulator.web.app"}) == [
        "pytest"]


def test_client_distribution_ships_the_one_o41_package_with_only_what_it_imports():
    client_dir = ROOT / "clients" / "o41"
    client = pyproject(client_dir / "pyproject.toml")
    root = pyproject(ROOT / "pyproject.toml")
    (source,) = client["tool"]["setuptools"]["package-dir"].values()
    assert (client_dir / source).resolve() == ROOT / "o41", "the same source, not a copy"
    packages = {".".join(init.relative_to(ROOT).parent.parts)
                for init in (ROOT / "o41").rglob("__init__.py")}
    assert set(client["tool"]["setuptools"]["packages"]) == packages, "every subpackage ships"
    deps = declared(client["project"]["dependencies"])
    assert third_party_imports(ROOT / "o41") <= deps
    for extra in set(PLUGINS.values()):
        plugged = declared(client["project"]["optional-dependencies"][extra])
        assert plugged == declared(root["project"]["optional-dependencies"][extra]), extra
        assert third_party_imports(ROOT / "o41", plugins=True) <= deps | plugged
    assert not deps & SERVER_AND_TEST_STACK
    # Every command and plugin of the root project that lives in o41 comes with the client.
    for group, points in [("scripts", root["project"]["scripts"]),
                          *root["project"].get("entry-points", {}).items()]:
        for name, target in points.items():
            if target.startswith("o41."):
                where = client["project"].get(group) or client["project"]["entry-points"][group]
                assert where[name] == target, (group, name)
    assert client["project"]["requires-python"] == root["project"]["requires-python"]


def test_root_distribution_declares_its_imports_and_keeps_the_test_stack_in_extras():
    project = pyproject(ROOT / "pyproject.toml")["project"]
    base = declared(project["dependencies"])
    assert not base & {"pytest", "hypothesis"}
    for package in ("emulator", "replay", "o41"):
        assert third_party_imports(ROOT / package) <= base, package
    suite = base | declared(project["optional-dependencies"]["conformance"])
    assert third_party_imports(ROOT / "conformance") <= suite
    assert suite <= base | declared(project["optional-dependencies"]["test"])
    assert isinstance(project["license"], str), "an SPDX expression, not the deprecated table"
