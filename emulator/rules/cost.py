"""What checkpointing costs by where the checkpoints go: the page's cost table, from the prices.

Pure arithmetic over :class:`~emulator.core.prices.Prices`, shared by `o41-emulator cost` and the
usage page, so the table a user prints is the one the emulator bills by.
"""

from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass

from ..core.prices import GB, Prices

_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
# Spelled-out units as people type them (`30min`, `2hours`), each meaning one of the above.
_UNIT_NAMES = {
    "s": ("s", "sec", "secs", "second", "seconds"),
    "m": ("m", "min", "mins", "minute", "minutes"),
    "h": ("h", "hr", "hrs", "hour", "hours"),
    "d": ("d", "day", "days"),
    "w": ("w", "wk", "wks", "week", "weeks"),
}
_UNIT_OF = {name: unit for unit, names in _UNIT_NAMES.items() for name in names}
_DURATION_PART = re.compile(
    r"(\d+(?:\.\d+)?)(" + "|".join(sorted(_UNIT_OF, key=len, reverse=True)) + ")")


def parse_duration(text: str) -> float:
    """Seconds in `90s`, `30m`, `30min`, `1h`, `2hours`, `7d`, `2w` or a sum such as `1h30m`;
    else ValueError."""
    cleaned = text.strip().lower().replace(" ", "")
    parts = _DURATION_PART.findall(cleaned)
    if not cleaned or "".join(n + u for n, u in parts) != cleaned:
        raise ValueError(f"{text!r} is not a duration such as 90s, 30m, 30min, 1h, 7d or "
                         "1h30m")
    seconds = sum(float(n) * _UNIT_SECONDS[_UNIT_OF[u]] for n, u in parts)
    if seconds <= 0:
        raise ValueError(f"{text!r} is not a positive duration")
    return seconds


def human_duration(seconds: float) -> str:
    """An exact spelling in days and smaller units (`30m`, `7d`, `1h30m`) for parse_duration."""
    if seconds != int(seconds):
        return f"{seconds:g}s"
    rest, out = int(seconds), ""
    for unit in ("d", "h", "m", "s"):
        n, rest = divmod(rest, _UNIT_SECONDS[unit])
        if n:
            out += f"{n}{unit}"
    return out or "0s"


def human_bytes(n: float) -> str:
    """Decimal units, as the price table counts them (GB = 10^9 bytes)."""
    for unit, size in (("PB", 10**15), ("TB", 10**12), ("GB", 10**9), ("MB", 10**6), ("kB", 10**3)):
        if abs(n) >= size:
            return f"{n / size:.3g} {unit}" if n / size < 100 else f"{n / size:.0f} {unit}"
    return f"{int(n)} B"


def usd(amount: float) -> str:
    """Dollars to the cent; under a cent, to three significant digits (an emulator's bytes)."""
    if amount == 0 or abs(amount) >= 0.01:
        return f"${amount:,.2f}"
    decimals = 2 - math.floor(math.log10(abs(amount)))
    return f"${amount:.{decimals}f}".rstrip("0")


@dataclass(frozen=True)
class CostRow:
    """One destination of the checkpoints: a route, the cloud the bytes leave, and the bill."""

    label: str
    route: str
    cloud: str | None
    usd_per_gb: float
    total_usd: float


@dataclass(frozen=True)
class CostTable:
    checkpoint_bytes: int
    every_s: float
    for_s: float
    checkpoints: int
    written_bytes: int
    rows: tuple[CostRow, ...]
    resume: tuple[CostRow, ...]  # one cross-cloud read of the latest, by the cloud it leaves

    def range(self, route: str) -> tuple[float, float]:
        totals = [r.total_usd for r in self.rows if r.route == route]
        return min(totals), max(totals)


def _clouds(prices: dict[str, float]) -> list[str]:
    return sorted(c for c in prices if c != "other")


def cost_table(prices: Prices, checkpoint_bytes: int, every_s: float, for_s: float) -> CostTable:
    """Checkpoints of `checkpoint_bytes` every `every_s` seconds for `for_s` seconds."""
    if checkpoint_bytes <= 0:
        raise ValueError("the checkpoint size must be positive")
    if every_s > for_s:
        raise ValueError("the interval is longer than the run: no checkpoint is written")
    # A small tolerance keeps 7d / 30m at 336 despite float durations such as 0.5h.
    checkpoints = int(for_s / every_s + 1e-9)
    written = checkpoints * checkpoint_bytes
    gb = written / GB
    rows = [CostRow("into the box's own region", "local", None, 0.0, 0.0)]
    inter = {c: prices.per_gb("inter_region", c) for c in _clouds(prices.inter_region)}
    if len(set(inter.values())) == 1:
        rate = next(iter(inter.values()))
        rows.append(CostRow("to another region of the same cloud", "inter_region", None, rate,
                            gb * rate))
    else:
        rows += [
            CostRow(f"to another region of {c}", "inter_region", c, rate, gb * rate)
            for c, rate in inter.items()
        ]
    cross = {c: prices.per_gb("cross_cloud", c) for c in _clouds(prices.cross_cloud)}
    rows += [
        CostRow(f"out of the cloud, leaving {c}", "cross_cloud", c, rate, gb * rate)
        for c, rate in cross.items()
    ]
    resume = tuple(
        CostRow(f"one cross-cloud resume, leaving {c}", "cross_cloud", c, rate,
                checkpoint_bytes / GB * rate)
        for c, rate in cross.items()
    )
    return CostTable(checkpoint_bytes, every_s, for_s, checkpoints, written, tuple(rows), resume)


def as_json(table: CostTable) -> dict:
    """The table as `o41-emulator cost --json` prints it: every figure, in bytes, seconds
    and USD, unrounded."""
    return {
        "checkpoint_bytes": table.checkpoint_bytes, "every_s": table.every_s,
        "for_s": table.for_s, "checkpoints": table.checkpoints,
        "written_bytes": table.written_bytes,
        "rows": [asdict(r) for r in table.rows], "resume": [asdict(r) for r in table.resume],
    }


def render(table: CostTable) -> str:
    """The table as the CLI prints it: one line per destination, then the resume's cost."""
    many = "" if table.checkpoints == 1 else "s"
    head = (
        f"{human_bytes(table.checkpoint_bytes)} every {human_duration(table.every_s)} for "
        f"{human_duration(table.for_s)}: {table.checkpoints} checkpoint{many}, "
        f"{human_bytes(table.written_bytes)} written"
    )
    width = max(len(r.label) for r in table.rows)
    lines = [head, "", f"{'where the checkpoints go':<{width}}  {'$/GB':>6}  {'total':>10}"]
    for r in table.rows:
        lines.append(f"{r.label:<{width}}  {r.usd_per_gb:>6.3f}  {usd(r.total_usd):>10}")
    low, high = min(r.total_usd for r in table.resume), max(r.total_usd for r in table.resume)
    each = ", ".join(f"{r.cloud} {usd(r.total_usd)}" for r in table.resume)
    spread = usd(low) if low == high else f"{usd(low)}-{usd(high)}"
    lines += [
        "",
        f"one cross-cloud resume of the latest ({human_bytes(table.checkpoint_bytes)}): "
        f"{spread} ({each})",
    ]
    return "\n".join(lines)
