"""``python -m conformance.mutants``: run the mutant proxy, list the mutants, or run the table.

    python -m conformance.mutants --upstream URL --mutant NAME [--port P]
    python -m conformance.mutants --list
    python -m conformance.mutants table [--spawn | --upstream URL] [--json FILE] [--jobs N]
    python -m conformance.mutants legal [--spawn | --upstream URL] [--only NAME|all]
"""

from __future__ import annotations

import argparse
import sys

from conformance.mutants import MUTANTS
from conformance.mutants.base import Mutant
from conformance.mutants.proxy import HttpUpstream
from conformance.mutants.proxy import MutantProxy


def make_mutant(name: str) -> Mutant:
    """An instance of the mutant ``name``; ``none`` passes everything through."""
    if name == "none":
        return Mutant()
    if name not in MUTANTS:
        raise SystemExit(f"unknown mutant {name!r}; see --list")
    return MUTANTS[name]()


def list_lines() -> list[str]:
    rows = sorted(MUTANTS.values(), key=lambda m: (m.clause, m.name))
    width = max((len(m.name) for m in rows), default=4)
    return [f"{m.name:<{width}}  {m.clause:<10}  {m.summary}" for m in rows]


def proxy_main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m conformance.mutants")
    parser.add_argument("--upstream", help="base URL of the implementation under test")
    parser.add_argument("--mutant", default="none", help="mutant name, or none (default)")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port and prints it")
    parser.add_argument("--list", action="store_true", help="print the mutant table and exit")
    parser.add_argument("-v", "--verbose", action="store_true", help="log every request")
    args = parser.parse_args(argv)
    if args.list:
        print("\n".join(list_lines()))
        print(f"{len(MUTANTS)} mutants")
        return 0
    if not args.upstream:
        parser.error("--upstream URL is required (or --list)")
    proxy = MutantProxy(HttpUpstream(args.upstream), make_mutant(args.mutant), args.port,
                        verbose=args.verbose)
    print(f"mutant proxy {args.mutant} listening on {proxy.url} -> {args.upstream}", flush=True)
    try:
        proxy.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        proxy.server_close()
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["table"]:
        from conformance.mutants.runner import main as table_main

        return table_main(argv[1:])
    if argv[:1] == ["legal"]:
        from conformance.mutants.legal_runner import main as legal_main

        return legal_main(argv[1:])
    return proxy_main(argv)


if __name__ == "__main__":
    sys.exit(main())
