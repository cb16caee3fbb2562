"""The store seam: every statement the contract's rules run, behind functions named by
intent (`artifacts.lock`, `versions.latest_step`, `uploads.mark_committed`, ...).

The rule modules (`opening`, `versions`, `uploads`, `retention`, `replies`, `usage`) call
these and hold no SQL of their own; an import-linter contract keeps SQLAlchemy out of them. Each
function takes the connection of the request (`Backend.conn()`), so a rule decides where its
transaction begins and ends (`transaction`), and every statement is built once, here.
"""

from __future__ import annotations

from ..db import transaction
from . import artifacts, overview, uploads, usage, versions

__all__ = ["artifacts", "overview", "transaction", "uploads", "usage", "versions"]
