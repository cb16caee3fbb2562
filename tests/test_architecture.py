"""The import contracts of docs/architecture.md hold (import-linter, configured in
pyproject.toml; CI also runs `lint-imports` on its own)."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import tomllib
from pathlib import Path

from tests.support.deadlines import HANG_GUARD

ROOT = Path(__file__).resolve().parent.parent


def test_import_contracts_are_kept():
    lint = Path(sys.executable).with_name("lint-imports")
    out = subprocess.run([str(lint)], cwd=ROOT, capture_output=True, text=True, timeout=HANG_GUARD)
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    assert f"Contracts: {len(contracts['contracts'])} kept, 0 broken." in out.stdout


def test_architecture_doc_names_every_contract():
    doc = (ROOT / "docs" / "architecture.md").read_text()
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    missing = [c["name"] for c in contracts["contracts"] if c["name"] not in doc]
    assert missing == []


def _client_modules() -> dict[str, ast.Module]:
    found = {}
    for path in (ROOT / "o41").rglob("*.py"):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = ast.parse(path.read_text(), str(path))
    return found


def test_one_client_module_installs_process_hooks():
    hooks = {("os", "register_at_fork"), ("atexit", "register"), ("signal", "signal")}
    installers = sorted(
        name for name, tree in _client_modules().items() for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
        and isinstance(node.func.value, ast.Name) and (node.func.value.id, node.func.attr) in hooks)
    assert set(installers) == {"o41.job.hooks"}


def test_client_modules_import_no_circle_type_only_and_in_function_imports_counted():
    modules = _client_modules()
    edges: dict[str, set[str]] = {name: set() for name in modules}
    for name, tree in modules.items():
        package = name if (ROOT / name.replace(".", "/") / "__init__.py").exists() \
            else name.rpartition(".")[0]
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[:len(package.split(".")) - node.level + 1]
                    base = ".".join([*anchor, *([node.module] if node.module else [])])
                targets = [base, *(f"{base}.{a.name}" for a in node.names)]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                continue
            for target in targets:
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                if target and target not in (name, "o41"):
                    edges[name].add(target)

    def reaches(start: str, goal: str) -> bool:
        seen, todo = set(), list(edges[start])
        while todo:
            current = todo.pop()
            if current == goal:
                return True
            if current not in seen:
                seen.add(current)
                todo.extend(edges[current])
        return False

    assert [name for name in modules if reaches(name, name)] == []


def test_client_filesystem_is_composed_of_a_reader_and_a_writer_not_a_class_chain():
    from o41.fs.filesystem import O41FileSystem
    from o41.fs.reader import Reader
    from o41.fs.writer import Writer

    bases = [c for c in O41FileSystem.__mro__[1:] if c.__module__.startswith("o41")]
    assert bases == []
    fs = O41FileSystem(api_url="http://127.0.0.1:9", api_key="k", skip_instance_cache=True)
    assert isinstance(fs.reader, Reader) and isinstance(fs.writer, Writer)


def test_no_client_parameter_reaches_a_host_as_any():
    hosts = {"self", "fs", "host", "owner"}
    found = [f"{name}:{node.lineno}" for name, tree in _client_modules().items()
             for node in ast.walk(tree)
             if isinstance(node, ast.arg) and node.arg in hosts
             and isinstance(node.annotation, ast.Name) and node.annotation.id == "Any"]
    assert found == []


def test_no_client_module_reads_a_private_name_of_another_object():
    stdlib = {"os", "sys", "threading", "signal", "io"}  # os._exit is their public API
    found = [f"{name}:{node.lineno} {ast.unparse(node)}"
             for name, tree in _client_modules().items() for node in ast.walk(tree)
             if isinstance(node, ast.Attribute) and node.attr.startswith("_")
             and not node.attr.startswith("__")
             and not (isinstance(node.value, ast.Name)
                      and node.value.id in {"self", "cls"} | stdlib)]
    assert found == []


def test_client_has_no_slf001_and_at_most_ten_any_annotations():
    ruff = Path(sys.executable).with_name("ruff")
    out = subprocess.run([str(ruff), "check", "--isolated", "--select", "SLF001,ANN401",
                          "--output-format", "concise", "o41"],
                         cwd=ROOT, capture_output=True, text=True, timeout=300)
    codes = re.findall(r": (SLF001|ANN401) ", out.stdout)
    assert codes.count("SLF001") == 0, out.stdout[-3000:]
    assert codes.count("ANN401") <= 10, out.stdout[-3000:]


def _layers() -> list[str]:
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    (layers,) = [c for c in contracts["contracts"]
                 if c["type"] == "layers" and c["containers"] == ["emulator"]]
    return [name.strip() for layer in layers["layers"]
            for name in layer.replace("|", ":").split(":")]


def test_emulator_layers_are_its_packages_and_every_module_sits_in_one():
    emulator = ROOT / "emulator"
    assert {p.name for p in emulator.glob("*.py")} == {"__init__.py", "__main__.py"}
    packages = {p.parent.name for p in emulator.glob("*/__init__.py")}
    assert set(_layers()) == packages | {"__main__"}


def test_architecture_doc_draws_every_emulator_package_and_module():
    doc = (ROOT / "docs" / "architecture.md").read_text()
    tree = doc.split("## The emulator's layers", 1)[1].split("```", 2)[1]
    # an entry starts two spaces in; its description goes on in lines indented further
    entry_lines = re.finditer(r"^  (\S+)(.*(?:\n   +.*)*)", tree, re.M)
    entries = {m.group(1): m.group(2) for m in entry_lines}
    for package in sorted((ROOT / "emulator").glob("*/__init__.py")):
        folder = package.parent
        entry = entries.get(f"{folder.name}/")
        assert entry is not None, folder.name
        for module in folder.glob("*.py"):
            if module.stem != "__init__":
                assert re.search(rf"\b{module.stem}\b", entry), f"{folder.name}/{module.name}"


def test_project_tests_define_no_fixture_named_like_the_plugins():
    """The installed plugin's fixtures (emulator/run/pytest_fixture.py) are what a test asking
    for ``o41_emulator`` gets: no fixture of this project's own shadows them."""
    plugin = ast.parse((ROOT / "emulator" / "run" / "pytest_fixture.py").read_text())
    ours = {node.name for node in plugin.body if isinstance(node, ast.FunctionDef)
            and not node.name.startswith("_")}
    shadows = [
        f"{path.relative_to(ROOT)}: {node.name}"
        for path in [*(ROOT / "tests").rglob("*.py"), ROOT / "conftest.py"]
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.FunctionDef) and node.name in ours]
    assert ours >= {"o41_emulator", "o41_emulator_server"} and shadows == []


def test_no_module_defines_a_top_level_function_or_class_twice():
    """A second ``def`` of a name replaces the first for every caller, and ruff's F811 misses
    it once the name is used after both: a merge of two branches left two ``_declared_size``
    in one mutant module, and a mutant survived on the TypeError."""
    twice = []
    for package in ("conformance", "emulator", "o41", "replay", "bench", "tests"):
        for path in sorted((ROOT / package).rglob("*.py")):
            seen: set[str] = set()
            for node in ast.parse(path.read_text()).body:
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                    if node.name in seen:
                        twice.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name}")
                    seen.add(node.name)
    assert twice == []
