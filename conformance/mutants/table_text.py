"""The mutant table as text: the terminal's lines, and the markdown block of
docs/conformance.md (between the markers, which a run replaces)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from conformance.mutants import MUTANTS

if TYPE_CHECKING:
    from conformance.mutants.runner import Outcome

__all__ = ["MARK_BEGIN", "MARK_END", "markdown", "summary", "table_lines", "write_markdown"]

MARK_BEGIN, MARK_END = "<!-- mutants:begin -->", "<!-- mutants:end -->"


def table_lines(outcomes: list[Outcome]) -> list[str]:
    width = max((len(o.name) for o in outcomes), default=6)
    lines = [f"{'mutant':<{width}}  {'clause':<10}  {'verdict':<8}  killed by"]
    lines += [f"{o.name:<{width}}  {o.clause:<10}  {o.verdict:<8}  {o.killed_by}"
              for o in outcomes]
    return lines


def summary(outcomes: list[Outcome]) -> tuple[int, int, float]:
    killed = sum(o.verdict == "killed" for o in outcomes)
    return killed, len(outcomes), (killed / len(outcomes) if outcomes else 0.0)


def markdown(outcomes: list[Outcome]) -> str:
    killed, total, ratio = summary(outcomes)
    rows = ["| mutant | clause | verdict | killed by |", "|---|---|---|---|"]
    for o in outcomes:
        summary_text = MUTANTS[o.name].summary.replace("|", "\\|")
        rows.append(f"| `{o.name}`: {summary_text} | {o.clause} | {o.verdict} | "
                    f"{'`' + o.killed_by + '`' if o.killed_by else ''} |")
    head = f"{killed} of {total} mutants killed ({ratio:.1%}).\n\n"
    return f"{MARK_BEGIN}\n{head}" + "\n".join(rows) + f"\n{MARK_END}\n"


def write_markdown(path: Path, text: str) -> None:
    """Replace the marked table in ``path`` if it has one, else write the table alone."""
    old = path.read_text() if path.exists() else ""
    if MARK_BEGIN in old and MARK_END in old:
        start, end = old.index(MARK_BEGIN), old.index(MARK_END) + len(MARK_END) + 1
        path.write_text(old[:start] + text + old[end:])
    else:
        path.write_text(text)
