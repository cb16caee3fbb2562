"""The one table: every figure next to what it was measured against, its ratio and its goal."""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass

OPS: dict[str, Callable[[float, float], bool]] = {
    ">=": operator.ge, "<=": operator.le, "<": operator.lt,
}


@dataclass
class Row:
    """One figure. `holds` is None when it could not be measured (`note` says why)."""

    figure: str
    emulator: str
    against: str
    ratio: float | None
    goal: str
    holds: bool | None
    note: str = ""


def fmt(value: float, unit: str) -> str:
    if unit == "MB/s":
        return f"{value:,.0f} MB/s"
    if unit in ("req/s", "cycles/s"):
        return f"{value:,.0f} {unit}"
    if unit == "ms":
        return f"{value:.2f} ms" if value < 10 else f"{value:,.0f} ms"
    if unit == "s":
        return f"{value:.2f} s"
    if unit == "MB":
        return f"{value:.0f} MB"
    if unit == "x":  # a ratio of bytes, e.g. bytes read over bytes asked for
        return f"{value:.3f}x"
    return f"{value:g} {unit}"


def ratio_row(figure: str, ours: float, theirs: float, unit: str, label: str,
              op: str, target: float) -> Row:
    """A goal on the ratio ours / theirs, e.g. read throughput >= 3x moto."""
    ratio = ours / theirs if theirs else float("inf")
    return Row(figure, fmt(ours, unit), f"{label} {fmt(theirs, unit)}", ratio,
               f"{op} {target:g}x", OPS[op](ratio, target))


def limit_row(figure: str, ours: float, unit: str, op: str, target: float,
              theirs: float | None = None, label: str = "") -> Row:
    """A goal on the absolute value, shown beside a reference measured in the same run."""
    ratio = ours / theirs if theirs else None
    against = f"{label} {fmt(theirs, unit)}" if theirs is not None else label or "-"
    return Row(figure, fmt(ours, unit), against, ratio, f"{op} {fmt(target, unit)}",
               OPS[op](ours, target))


def side_row(figure: str, ours: float, theirs: float, unit: str, label: str) -> Row:
    """A figure beside its reference with no goal: what a choice costs, shown, not judged."""
    ratio = ours / theirs if theirs else None
    return Row(figure, fmt(ours, unit), f"{label} {fmt(theirs, unit)}", ratio, "-", None)


def missing_row(figure: str, goal: str, why: str, shown: str = "missing") -> Row:
    return Row(figure, shown, "-", None, goal, None, why)


def _cells(r: Row) -> list[str]:
    held = {True: "yes", False: "NO", None: "not judged"}[r.holds]
    ratio = "-" if r.ratio is None else f"{r.ratio:.2f}x"
    return [r.figure, r.emulator, r.against, ratio, r.goal, held]


HEAD = ["figure", "emulator", "measured against", "ratio", "goal", "holds"]


def text_table(rows: list[Row]) -> str:
    cells = [HEAD] + [_cells(r) for r in rows]
    widths = [max(len(c[i]) for c in cells) for i in range(len(HEAD))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
             for row in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    notes = [f"  {r.figure}: {r.note}" for r in rows if r.note]
    return "\n".join(lines + (["notes:"] + notes if notes else []))


def markdown_table(rows: list[Row]) -> str:
    lines = ["| " + " | ".join(HEAD) + " |", "|" + "---|" * len(HEAD)]
    lines += ["| " + " | ".join(_cells(r)) + " |" for r in rows]
    notes = [f"- {r.figure}: {r.note}" for r in rows if r.note]
    return "\n".join(lines + ([""] + notes if notes else []))
