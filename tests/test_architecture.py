"""The import contracts of docs/architecture.md hold (import-linter, configured in
pyproject.toml; CI also runs `lint-imports` on its own)."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_import_contracts_are_kept():
    lint = Path(sys.executable).with_name("lint-imports")
    out = subprocess.run([str(lint)], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    assert f"Contracts: {len(contracts['contracts'])} kept, 0 broken." in out.stdout


def test_architecture_doc_names_every_contract():
    doc = (ROOT / "docs" / "architecture.md").read_text()
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    missing = [c["name"] for c in contracts["contracts"] if c["name"] not in doc]
    assert missing == []
