"""Running, saving and plotting a claim's check — shared by every module in :mod:`rftheory.claims`."""

from __future__ import annotations

import argparse
import importlib
import platform
import sys
import time
from pathlib import Path
from typing import Any, Callable

from rftheory.output import write_json_atomic

#: Claims in the order ``rftheory verify all`` runs them.
CLAIMS = ("kernel_concentration", "law", "theorem1", "theorem2", "sign", "nhat", "twolayer_law")


def claim_module(name: str) -> Any:
    """Import ``rftheory.claims.<name>``; unknown names raise a clear RFTheoryError."""
    from rftheory.errors import RFTheoryError

    aliases = {"twolayer": "twolayer_law", "kernel": "kernel_concentration"}
    name = aliases.get(name, name)
    if name not in CLAIMS:
        raise RFTheoryError(f"unknown claim {name!r}; choose from: {', '.join(CLAIMS)}, all")
    return importlib.import_module(f"rftheory.claims.{name}")


def environment() -> dict:
    """Versions of the packages a result depends on, for provenance."""
    import numpy
    import scipy
    import sympy

    import rftheory

    return {"rftheory": rftheory.__version__, "numpy": numpy.__version__, "scipy": scipy.__version__,
            "sympy": sympy.__version__, "python": platform.python_version(),
            "machine": platform.machine(), "date": time.strftime("%Y-%m-%dT%H:%M:%S%z")}


def map_tasks(fn: Callable[[Any], Any], tasks: list, workers: int = 1):
    """Yield ``fn(task)`` for each task, in order: in this process when ``workers == 1``, else in
    a pool of worker processes (``fn`` must then be importable at module level)."""
    from concurrent.futures import ProcessPoolExecutor

    if workers == 1:
        yield from map(fn, tasks)
        return
    with ProcessPoolExecutor(max_workers=workers) as pool:
        yield from pool.map(fn, tasks)


def run_claim(name: str, *, quick: bool = False, seed: int = 0, out_dir: str | Path = "results",
              figures: bool = True, progress: Callable[[str], None] | None = None) -> dict:
    """Run one claim's check, save ``<out_dir>/<claim>.json`` and its figures; return the result."""
    module = claim_module(name)
    start = time.perf_counter()
    result = module.run(quick=quick, seed=seed, progress=progress)
    result = dict(result)
    result.setdefault("claim", module.CLAIM)
    result["quick"] = quick
    result["seed"] = seed
    result["wall_seconds"] = round(time.perf_counter() - start, 2)
    result["environment"] = environment()
    out = Path(out_dir)
    if figures:
        paths = module.plot(result, out / module.CLAIM)
        result["figures"] = [str(p) for p in paths]
    write_json_atomic(out / f"{module.CLAIM}.json", result)
    return result


def main_for(claim: str, argv: list[str] | None = None, *, prog: str | None = None) -> int:
    """``python -m rftheory.claims.<claim> [--quick] [--seed S] [--out DIR]``."""
    parser = argparse.ArgumentParser(prog=prog or f"python -m rftheory.claims.{claim}")
    parser.add_argument("--quick", action="store_true", help="small, fast version of the check")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="results", help="directory for JSON and figures")
    args = parser.parse_args(argv)
    result = run_claim(claim, quick=args.quick, seed=args.seed, out_dir=args.out,
                       progress=lambda msg: print(msg, file=sys.stderr, flush=True))
    print(claim_module(claim).summary(result))
    print(f"results: {Path(args.out) / (claim + '.json')}; figures: {', '.join(result.get('figures', []))}")
    return 0
