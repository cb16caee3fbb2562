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
    """The prices of the contract's table that ``prices`` does not hold ([] when it holds
    the minimum). Other numbers beside them (a version field, a count) are not prices and
    are left alone: each price is looked for by its route, its cloud and its value."""
    leaves = list(priced_leaves(prices))

    def holds(words: set[str], value: float, without: tuple[str, ...] = ()) -> bool:
        return any(words <= w and abs(v - value) <= _CLOSE and not any(c in w for c in without)
                   for w, v in leaves)

    table = DEFAULT_PRICES["cross_cloud"]
    problems = []
    inter = DEFAULT_PRICES["inter_region"]["aws"]
    if not holds({"inter_region"}, inter):
        problems.append(f"no inter_region price {inter}")
    for cloud in CLOUDS:
        # one inter_region price per cloud is allowed, and then each is the table's (0.02
        # in every cloud): a cloud's own entry at another price is a wrong table
        if any({"inter_region", cloud} <= w for w, _ in leaves) \
                and not holds({"inter_region", cloud}, inter):
            problems.append(f"inter_region of {cloud} is not priced {inter}")
    if not holds({"cross_cloud"}, table["other"], without=CLOUDS):
        problems.append(f"no cross_cloud price {table['other']} for a cloud outside "
                        f"{', '.join(CLOUDS)}")
    for cloud in CLOUDS:
        own = any({"cross_cloud", cloud} <= w for w, _ in leaves)
        if own and not holds({"cross_cloud", cloud}, table[cloud]):
            problems.append(f"cross_cloud of {cloud} is not priced {table[cloud]}")
        if not own and abs(table[cloud] - table["other"]) > _CLOSE:
            problems.append(f"no cross_cloud price for {cloud}")
    return problems
