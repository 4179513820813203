"""Issue #16, part 1: duplicate (collision) regions for n ≥ 2 — limits and region minima.

For n ∈ NS, activations, seeds and a grid of p: sphere data, Gaussian labels, θ* = Φ⁺Y, and for
every collision type of the configuration

* the smallest δ → 0 limit over its placements (:func:`rftheory.collisions.min_collision_limit`),
  with the count p*(type) = n + ℓ(d − 2) it should vanish up to;
* the leave-one-out baseline min_j ‖P⊥_{span{φ(x_i): i ≠ j}}θ‖²/‖θ‖² (n − 1 candidates at the
  other training points: what a collision must beat);
* for the "direct" types, the minimum over D_m(δ) by multi-start L-BFGS-B
  (:func:`rftheory.collisions.collision_region_minimum`) at the placement with the smallest limit,
  δ from DELTAS capped at :func:`max_region_radius`;
* limit checks: the region minimum at a small δ (below the kink radius) against the limit.

Run (repo root): ``nice -n 10 .venv/bin/python scratch/collisions_survey.py --workers 2`` (full
grid) or with
``--quick``; JSON goes to ``scratch/results/collisions_survey[_quick].json``. Wall times in the
JSON are polluted when the machine is shared.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np

from rftheory.collisions import (Collision, collision_region_minimum,
                                 collision_types, kink_radius, max_region_radius,
                                 min_collision_limit, zero_threshold)
from rftheory.data import gaussian_labels, sphere_data
from rftheory.features import RandomFeatures, train_min_norm
from rftheory.projection import projection_loss

ROOT = Path(__file__).resolve().parent
_V_STREAM = 0x434F4C4C  # "COLL"

FULL = {"d": 5, "ns": (2, 3, 4, 8, 16), "activations": ("relu+tanh", "tanh", "erf", "relu"),
        "seeds": (0, 1, 2), "ratios": (0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 4.0, 8.0),
        "direct_ratios": (0.5, 1.0, 2.0, 4.0), "deltas": (0.05, 0.15, 0.3),
        "direct_seeds_large_n": (0,), "random_starts": 1, "maxiter": 600, "check_delta": 1e-3,
        "direction_starts": 24}
QUICK = {"d": 4, "ns": (2, 3, 8), "activations": ("relu+tanh", "tanh"), "seeds": (0,),
         "ratios": (0.5, 1.0, 2.0, 4.0), "direct_ratios": (1.0, 2.0), "deltas": (0.1,),
         "direct_seeds_large_n": (0,), "random_starts": 1, "maxiter": 300, "check_delta": 1e-3,
         "direction_starts": 24}


def v_seed(seed: int) -> int:
    return int(np.random.SeedSequence([seed, _V_STREAM]).generate_state(1, np.uint32)[0])


def limit_types(n: int) -> list[tuple[int, ...]]:
    """All types for n ≤ 4; for n ≥ 8 the main one and four representatives."""
    if n <= 4:
        return collision_types(n)
    return [(2,) + (1,) * (n - 2), (2, 2) + (1,) * (n - 4), (3,) + (1,) * (n - 3),
            (2,) * (n // 2), (n,)]


def direct_types(n: int) -> list[tuple[int, ...]]:
    """Types whose region minimum is computed: all for n ≤ 4; main, all-pairs, all-on-one."""
    if n <= 4:
        return collision_types(n)
    return [(2,) + (1,) * (n - 2), (2,) * (n // 2), (n,)]


def _pad(kind: tuple[int, ...], n: int) -> Collision:
    return Collision(tuple(kind) + (0,) * (n - len(kind)))


def p_grid(n: int, d: int, ratios, types) -> list[int]:
    ps = {int(round(r * d * n)) for r in ratios}
    for kind in types:
        if max(kind) <= 3:
            thr = zero_threshold(_pad(kind, n), d)
            ps |= {thr - 1, thr, thr + 1, thr + 2}
    return sorted(p for p in ps if p >= n + 1)


def leave_one_out(features, X, theta) -> tuple[float, int]:
    """min_j ‖P⊥_{span φ(x_i), i ≠ j} θ‖²/‖θ‖² and its j: n − 1 candidates at distinct points."""
    n = X.shape[0]
    best = min_collision_limit(features, X, theta, (1,) * (n - 1)).best
    return best.loss, best.collision.left_out[0]


def survey_cell(activation: str, n: int, seed: int, cfg: dict, progress) -> dict:
    d = cfg["d"]
    X = sphere_data(n, d, seed)
    Y = gaussian_labels(n, seed)
    ltypes, dtypes = limit_types(n), direct_types(n)
    ps = p_grid(n, d, cfg["ratios"], ltypes)
    direct_ps = sorted({int(round(r * d * n)) for r in cfg["direct_ratios"]} | {n + d - 1})
    if n >= 8 and seed not in cfg["direct_seeds_large_n"]:
        direct_ps = []  # region minima at n ≥ 8 for the first seed(s) only (cost)
    rows = []
    for p in ps:
        t0 = time.perf_counter()
        f = RandomFeatures(activation, d, p, seed=v_seed(seed), v_cache_bytes=2**26)
        model = train_min_norm(f, X, Y)
        theta = np.asarray(model.theta)
        truth = projection_loss(f, X, theta, gradient=False).loss
        loo, loo_j = leave_one_out(f, X, theta)
        kr = kink_radius(f, X)
        types_out = []
        for kind in ltypes:
            search = min_collision_limit(f, X, theta, kind, max_refine=16 if max(kind) <= 3 else 4,
                                         starts=cfg["direction_starts"], seed=seed)
            lim = search.best
            entry = {
                "type": list(kind), "label": "+".join(map(str, kind)),
                "lost": lim.collision.lost, "threshold": lim.threshold,
                "placement": list(lim.collision.multiplicities),
                "limit": lim.loss, "limit_exact": lim.exact,
                "first_order": lim.first_order_loss, "lower_bound": lim.lower_bound,
                "screened": search.screened, "refined": search.refined,
                "certified": search.certified,
                "region": None,
            }
            if kind in dtypes and p in direct_ps:
                cap = max_region_radius(X, lim.collision)
                deltas = [dl for dl in cfg["deltas"] if dl <= cap] or [0.99 * cap]
                warm, region = [], []
                for k, delta in enumerate(deltas):
                    out = collision_region_minimum(
                        f, X, theta, lim.collision, delta, random_starts=cfg["random_starts"],
                        seed=seed * 100 + k, warm=warm, limit=lim,
                        options={"ftol": 1e-13, "gtol": 1e-11, "maxiter": cfg["maxiter"]})
                    warm = [out.X_hat]
                    region.append({"delta": delta, "loss": out.loss, "losses": out.losses,
                                   "iterations": out.iterations, "hit_maxiter": out.hit_maxiter,
                                   "min_separation": out.min_separation,
                                   "max_distance": out.max_distance})
                entry["region"] = {"cap": cap, "deltas": deltas, "minima": region}
            types_out.append(entry)
        row = {"p": p, "p_over_dn": p / (d * n), "p_minus_n_minus_d": p - n - d,
               "train_residual": model.train_residual, "truth_loss": truth,
               "leave_one_out": loo, "leave_one_out_point": loo_j,
               "kink_radius": kr if math.isfinite(kr) else None,
               "types": types_out, "seconds": time.perf_counter() - t0}
        rows.append(row)
        if progress:
            best = min(types_out, key=lambda e: e["limit"])
            reg = [e["region"]["minima"][-1]["loss"] for e in types_out if e["region"]]
            progress(f"{activation} n={n} seed={seed} p={p} (p/dn={p / (d * n):.3g}): "
                     f"min limit {best['limit']:.3e} ({best['label']}), loo {loo:.3e}, "
                     f"region minima {['%.2e' % v for v in reg]}; {row['seconds']:.1f} s")
    return {"activation": activation, "n": n, "d": d, "seed": seed, "v_seed": v_seed(seed),
            "limit_types": [list(t) for t in ltypes], "direct_types": [list(t) for t in dtypes],
            "rows": rows}


def limit_checks(cfg: dict, progress) -> list[dict]:
    """Region minimum against the limit at two small δ, for every type with m ≤ 3 at n ≤ 4.

    Pairs: δ₁ = min(check_delta, kink radius/2) and δ₁/10. Triples: δ₁ = min(10·check_delta,
    kink radius/2) and δ₁/10, skipped when δ₁/10 < 1e-3 — a collapsed triple's Gram matrix has
    condition ~(δ√d)⁻⁴, beyond float64 below that (the loss of the configuration itself is then
    meaningless). The relative gap (L₀ − min)/L₀ should be O(δ): candidates at single points
    move the loss at first order in δ.
    """
    d = cfg["d"]
    out = []
    for activation in cfg["activations"]:
        for n in [m for m in cfg["ns"] if m <= 4]:
            seed = cfg["seeds"][0]
            X = sphere_data(n, d, seed)
            Y = gaussian_labels(n, seed)
            p = 2 * d * n
            f = RandomFeatures(activation, d, p, seed=v_seed(seed), v_cache_bytes=2**26)
            theta = np.asarray(train_min_norm(f, X, Y).theta)
            kr = kink_radius(f, X)
            for kind in collision_types(n):
                if max(kind) > 3:
                    continue
                lim = min_collision_limit(f, X, theta, kind, seed=seed).best
                top = cfg["check_delta"] * (10 if max(kind) == 3 else 1)
                d1 = min(top, kr / 2)
                entry = {"activation": activation, "n": n, "p": p, "type": list(kind),
                         "placement": list(lim.collision.multiplicities), "limit": lim.loss,
                         "kink_radius": kr if math.isfinite(kr) else None,
                         "deltas": [], "region": [], "relative_gap": []}
                if max(kind) == 3 and d1 / 10 < 1e-3:
                    entry["note"] = "kink radius below the resolvable triple scale"
                    out.append(entry)
                    continue
                for delta in (d1, d1 / 10):
                    reg = collision_region_minimum(f, X, theta, lim.collision, delta,
                                                   random_starts=0, limit=lim)
                    entry["deltas"].append(delta)
                    entry["region"].append(reg.loss)
                    entry["relative_gap"].append((lim.loss - reg.loss) / lim.loss)
                out.append(entry)
                if progress:
                    progress(f"check {activation} n={n} {kind}: L0={lim.loss:.6e}; rel gaps "
                             + ", ".join(f"{dl:.1e}: {g:.2e}" for dl, g in
                                         zip(entry["deltas"], entry["relative_gap"])))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--ns", type=str, default=None, help="comma-separated n values (override)")
    ap.add_argument("--activations", type=str, default=None)
    ap.add_argument("--seeds", type=str, default=None)
    ap.add_argument("--workers", type=int, default=1, help="worker processes over the cells")
    args = ap.parse_args(argv)
    cfg = dict(QUICK if args.quick else FULL)
    if args.ns:
        cfg["ns"] = tuple(int(v) for v in args.ns.split(","))
    if args.activations:
        cfg["activations"] = tuple(args.activations.split(","))
    if args.seeds:
        cfg["seeds"] = tuple(int(v) for v in args.seeds.split(","))
    out = args.out or ROOT / "results" / ("collisions_survey_quick.json" if args.quick
                                          else "collisions_survey.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()

    def progress(msg):
        print(f"[{time.perf_counter() - t0:7.1f} s] {msg}", flush=True)

    tasks = [(a, n, seed) for a in cfg["activations"] for n in cfg["ns"] for seed in cfg["seeds"]]
    # Largest cells first, so that the pool's workers finish together.
    tasks.sort(key=lambda t: -t[1])
    cells = []
    if args.workers == 1:
        for a, n, seed in tasks:
            cells.append(survey_cell(a, n, seed, cfg, progress))
            _write(out, cfg, _ordered(cells), None, t0)
    else:
        from concurrent.futures import ProcessPoolExecutor, as_completed

        with ProcessPoolExecutor(args.workers) as pool:
            futures = [pool.submit(survey_cell, a, n, seed, cfg, print) for a, n, seed in tasks]
            for fut in as_completed(futures):
                cell = fut.result()
                cells.append(cell)
                progress(f"done {cell['activation']} n={cell['n']} seed={cell['seed']}")
                _write(out, cfg, _ordered(cells), None, t0)
    cells = _ordered(cells)
    checks = limit_checks(cfg, progress)
    _write(out, cfg, cells, checks, t0)
    print(f"wrote {out} ({time.perf_counter() - t0:.0f} s)")
    return 0


def _ordered(cells: list[dict]) -> list[dict]:
    return sorted(cells, key=lambda c: (c["activation"], c["n"], c["seed"]))


def _write(out: Path, cfg: dict, cells, checks, t0) -> None:
    import platform

    payload = {"script": "scratch/collisions_survey.py", "config": cfg, "cells": cells,
               "limit_checks": checks, "wall_seconds": time.perf_counter() - t0,
               "machine": platform.node(), "date": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
    tmp = out.with_suffix(".tmp")
    tmp.write_text(json.dumps(payload, indent=1, default=_json_default))
    tmp.replace(out)


def _json_default(o):
    if isinstance(o, np.ndarray):
        return o.tolist()
    if isinstance(o, (np.floating, np.integer)):
        return o.item()
    if isinstance(o, tuple):
        return list(o)
    raise TypeError(type(o))


if __name__ == "__main__":
    sys.exit(main())
