"""What a published ``prices`` object must hold, in whatever shape (USAGE-1.f).

docs/contract.md leaves the shape of ``usage/read``'s ``prices`` to the implementation but
fixes its minimum content: the ``inter_region`` price, and the ``cross_cloud`` price of each
cloud of the table and of any other cloud, in USD per GB, under keys (or ``route`` /
``cloud`` fields of the same row) naming the route and the cloud. This reads any such shape
as numbers tagged by the words around them, so a nested map and a list of rows both pass.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from conformance.model import DEFAULT_PRICES

__all__ = ["priced_leaves", "prices_missing"]

ROUTES = ("local", "inter_region", "cross_cloud")
CLOUDS = ("aws", "gcp", "azure")
_CLOSE = 1e-9


def priced_leaves(
    value: Any, words: frozenset[str] = frozenset()
) -> Iterator[tuple[frozenset[str], float]]:
    """Every number in ``value`` with the words that tag it: the keys on its path and the
    string fields of every object around it (lower case)."""
    if isinstance(value, dict):
        here = words | {str(v).lower() for v in value.values() if isinstance(v, str)}
        for key, item in value.items():
            yield from priced_leaves(item, here | {str(key).lower()})
    elif isinstance(value, list):
        for item in value:
            yield from priced_leaves(item, words)
    elif isinstance(value, int | float) and not isinstance(value, bool):
        yield words, float(value)


def prices_missing(prices: Any) -> list[str]:
    """What ``prices`` lacks or gets wrong against the contract's table ([] when it holds
    the minimum)."""
    leaves = [(w, v) for w, v in priced_leaves(prices) if any(r in w for r in ROUTES)]
    problems = []
    for words, value in leaves:
        clouds = [c for c in CLOUDS if c in words]
        if "local" in words and abs(value) > _CLOSE:
            problems.append(f"local priced {value}, not 0")
        if "inter_region" in words and abs(value - DEFAULT_PRICES["inter_region"]["aws"]) > _CLOSE:
            problems.append(f"inter_region priced {value} ({sorted(words)})")
        if "cross_cloud" in words:
            want = DEFAULT_PRICES["cross_cloud"][clouds[0] if clouds else "other"]
            if len(clouds) <= 1 and abs(value - want) > _CLOSE:
                problems.append(f"cross_cloud {clouds or 'other'} priced {value}, not {want}")
    if not any("inter_region" in w for w, _ in leaves):
        problems.append("no inter_region price")
    cross = [(w, v) for w, v in leaves if "cross_cloud" in w]
    other = [v for w, v in cross if not any(c in w for c in CLOUDS)]
    if not other:
        problems.append("no cross_cloud price for a cloud outside aws, gcp and azure")
    for cloud in CLOUDS:
        own = [v for w, v in cross if cloud in w]
        want = DEFAULT_PRICES["cross_cloud"][cloud]
        if not own and not any(abs(v - want) <= _CLOSE for v in other):
            problems.append(f"no cross_cloud price for {cloud}")
    return problems
