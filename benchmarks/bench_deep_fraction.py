"""The GD step of ``verify deep_law``'s training: η = fraction·2/λ_max at two fractions, side by side.

For each network, data set, p^(L)/(dn) and seed (n = 4, the claim's networks and data), trains
the same initialisation at both fractions (``rftheory.deep.train_gd``) and prints the GD steps,
the training seconds, the body's feature drift ‖Φ − Φ₀‖/‖Φ₀‖ and the projection loss at the true
X on the trained features (the span residual, the attack's floor), then the ratios' range. The
claim's default step (``deep_law.Config.fraction``) is chosen from these figures: a larger step
costs fewer steps; it must leave the trained body, and so the attack's target, as it is.

    python benchmarks/bench_deep_fraction.py                 # fractions 0.1 and 0.5
    python benchmarks/bench_deep_fraction.py --fractions 0.1 0.3 --seeds 2
"""

from __future__ import annotations

import argparse
import statistics

from rftheory.claims.deep_law import case_data, make_net
from rftheory.deep import train_gd


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fractions", type=float, nargs=2, default=(0.1, 0.5))
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--n", type=int, default=4)
    ap.add_argument("--ratios", type=float, nargs="+", default=(2.0, 8.0))
    args = ap.parse_args()
    a, b = args.fractions
    print(f"{'net':6} {'data':8} {'ratio':>5} {'seed':>4}  {'steps':>11}  {'seconds':>11}  "
          f"{'drift':>13}  {'span residual':>19}")
    span_r, drift_r, sec = [], [], [0.0, 0.0]
    for arch in ("resnet", "vit"):
        for ds in ("sphere", "digits", "patches"):
            for ratio in args.ratios:
                for seed in range(args.seeds):
                    X, y = case_data(ds, args.n, seed)
                    net = make_net(arch, ds, args.n, ratio)
                    t = [train_gd(net, X, y, rng=seed, fraction=f) for f in (a, b)]
                    sec[0] += t[0].seconds
                    sec[1] += t[1].seconds
                    span_r.append(t[1].span_residual / t[0].span_residual)
                    drift_r.append(t[1].feature_change / t[0].feature_change)
                    print(f"{arch:6} {ds:8} {ratio:5g} {seed:4d}  {t[0].steps:5d}/{t[1].steps:<5d}  "
                          f"{t[0].seconds:5.1f}/{t[1].seconds:<5.1f}  "
                          f"{t[0].feature_change:.4f}/{t[1].feature_change:.4f}  "
                          f"{t[0].span_residual:.2e}/{t[1].span_residual:.2e}", flush=True)
    print(f"fraction {a} → {b}: training seconds {sec[0]:.0f} → {sec[1]:.0f}; drift ratio "
          f"{min(drift_r):.3f}–{max(drift_r):.3f}; span-residual ratio {min(span_r):.2f}–"
          f"{max(span_r):.2f} (median {statistics.median(span_r):.2f}) over {len(span_r)} trainings")


if __name__ == "__main__":
    main()
