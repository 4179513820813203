"""Issue #16, part 2: can (θ*, V) give away single training points when n ≪ p ≪ dn?

For a grid of p from n to 2dn, seeds, and attacks, the per-sample recovery
(:func:`rftheory.sample_recovery.sample_recovery`: a training point is recovered when some
candidate is within relative distance TOL of it) of

* k = 1 (θ* = Φ⁺y, one output): the set reconstruction (``reconstruct``; over-complete pools,
  pooled restarts);
* k = n outputs (θ* = Φ⁺Y, Y ∈ R^{n×n} Gaussian, rank n: span θ* = span Φ): the per-point span
  attack and the set reconstruction on the k-output θ.

Attacks are named in ATTACKS; ``--extra-attack LABEL=K:module:factory`` adds one from any module
(``factory(**kwargs)`` must return ``attack(features, theta, n_hat, seed) -> AttackOutput``; K is
``1`` or ``n``; kwargs as JSON after a second ``=``, e.g.
``--extra-attack gn=1:mypkg.attacks:gauss_newton={"max_steps": 500}``), so the grid can be rerun
with the stronger optimiser of issue #14.

Run (repo root): ``nice -n 10 .venv/bin/python scratch/single_sample_survey.py --workers 2``
(``--quick`` for a small grid); JSON to ``scratch/results/single_sample_survey[_quick].json``.
Wall times in the JSON are polluted when the machine is shared.
"""

from __future__ import annotations

import argparse
import importlib
import json
import platform
import sys
import time
from pathlib import Path

import numpy as np

from rftheory.data import gaussian_labels, sphere_data
from rftheory.features import RandomFeatures, train_min_norm
from rftheory.sample_recovery import reconstruct_attack, sample_recovery, span_point_attack

ROOT = Path(__file__).resolve().parent
_V_STREAM = 0x53534D50  # "SSMP"
_Y_STREAM = 2**40 + 180  # k-output labels

FULL = {"activation": "relu+tanh", "d": 12, "n": 6, "seeds": (0, 1, 2, 3, 4),
        "ps": (6, 9, 12, 15, 16, 17, 18, 19, 20, 22, 24, 30, 36, 48, 60, 72, 84, 96, 120, 144),
        "attacks": ("k1_reconstruct", "k1_reconstruct_pool", "kn_span", "kn_reconstruct"),
        "tol": 0.01, "max_steps": 2000, "starts_per_point": 10}
QUICK = {"activation": "relu+tanh", "d": 8, "n": 4, "seeds": (0, 1),
         "ps": (6, 10, 11, 12, 13, 16, 32, 48, 64),
         "attacks": ("k1_reconstruct", "kn_span", "kn_reconstruct"), "tol": 0.01,
         "max_steps": 1000, "starts_per_point": 5}


def make_attacks(cfg: dict) -> dict:
    """name -> (outputs "1" or "n", attack)."""
    steps = cfg["max_steps"]
    spp = cfg["starts_per_point"]
    return {
        "k1_reconstruct": ("1", reconstruct_attack(oversample=2.0, max_steps=steps)),
        "k1_reconstruct_pool": ("1", reconstruct_attack(oversample=4.0, restarts=2,
                                                        max_steps=steps)),
        "kn_span": ("n", span_point_attack(starts_per_point=spp)),
        "kn_reconstruct": ("n", reconstruct_attack(oversample=2.0, max_steps=steps)),
    }


def parse_extra(spec: str):
    """``LABEL=K:module:factory[=json kwargs]`` -> (label, (K, attack))."""
    label, rest = spec.split("=", 1)
    kwargs = {}
    if "=" in rest:
        rest, raw = rest.split("=", 1)
        kwargs = json.loads(raw)
    k, module, name = rest.split(":")
    if k not in ("1", "n"):
        raise SystemExit(f"--extra-attack: K must be 1 or n, got {k!r}")
    factory = getattr(importlib.import_module(module), name)
    return label, (k, factory(**kwargs))


def v_seed(seed: int) -> int:
    return int(np.random.SeedSequence([seed, _V_STREAM]).generate_state(1, np.uint32)[0])


def seed_cell(seed: int, cfg: dict, extra_specs: list[str]) -> dict:
    d, n = cfg["d"], cfg["n"]
    attacks = {k: v for k, v in make_attacks(cfg).items() if k in cfg["attacks"]}
    attacks.update(dict(parse_extra(s) for s in extra_specs))
    X = sphere_data(n, d, seed)
    y = gaussian_labels(n, seed)
    Yn = np.random.default_rng([seed, _Y_STREAM]).standard_normal((n, n))
    rows = []
    for p in cfg["ps"]:
        f = RandomFeatures(cfg["activation"], d, p, seed=v_seed(seed), v_cache_bytes=2**26)
        thetas = {"1": np.asarray(train_min_norm(f, X, y).theta),
                  "n": np.asarray(train_min_norm(f, X, Yn).theta)}
        row = {"p": p, "p_over_dn": p / (d * n), "p_over_n_plus_d": p / (n + d), "attacks": {}}
        for name, (k, attack) in attacks.items():
            t0 = time.perf_counter()
            out = attack(f, thetas[k], n, seed)
            rec = sample_recovery(X, out.candidates, tol=cfg["tol"])
            row["attacks"][name] = {
                "k": 1 if k == "1" else n, "fraction": rec.fraction, "count": rec.count,
                "fraction_sign_invariant": float(np.mean(rec.sign_invariant_distances < rec.tol)),
                "distances": rec.distances.tolist(),
                "n_candidates": rec.n_candidates, "true_candidates": rec.true_candidates,
                "info": out.info, "seconds": time.perf_counter() - t0}
        rows.append(row)
        print(f"seed {seed} p={p} (p/dn={p / (d * n):.3g}, p/(n+d)={p / (n + d):.3g}): "
              + ", ".join(f"{a}: {r['count']}/{n} ({r['true_candidates']}/{r['n_candidates']} "
                          f"cand., {r['seconds']:.1f} s)" for a, r in row["attacks"].items()),
              flush=True)
    return {"seed": seed, "v_seed": v_seed(seed), "rows": rows}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--attacks", type=str, default=None, help="comma-separated names of ATTACKS")
    ap.add_argument("--extra-attack", action="append", default=[])
    ap.add_argument("--seeds", type=str, default=None)
    args = ap.parse_args(argv)
    cfg = dict(QUICK if args.quick else FULL)
    if args.attacks is not None:
        cfg["attacks"] = tuple(a for a in args.attacks.split(",") if a)
    if args.seeds:
        cfg["seeds"] = tuple(int(v) for v in args.seeds.split(","))
    cfg["extra_attacks"] = list(args.extra_attack)
    out = args.out or ROOT / "results" / ("single_sample_survey_quick.json" if args.quick
                                          else "single_sample_survey.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    cells = []
    if args.workers == 1:
        for seed in cfg["seeds"]:
            cells.append(seed_cell(seed, cfg, args.extra_attack))
            _write(out, cfg, cells, t0)
    else:
        from concurrent.futures import ProcessPoolExecutor, as_completed

        with ProcessPoolExecutor(args.workers) as pool:
            futs = [pool.submit(seed_cell, s, cfg, args.extra_attack) for s in cfg["seeds"]]
            for fut in as_completed(futs):
                cells.append(fut.result())
                _write(out, cfg, cells, t0)
    _write(out, cfg, cells, t0)
    print(f"wrote {out} ({time.perf_counter() - t0:.0f} s)")
    return 0


def _write(out: Path, cfg: dict, cells: list[dict], t0: float) -> None:
    payload = {"script": "scratch/single_sample_survey.py", "config": cfg,
               "cells": sorted(cells, key=lambda c: c["seed"]),
               "wall_seconds": time.perf_counter() - t0, "machine": platform.node(),
               "date": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
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
