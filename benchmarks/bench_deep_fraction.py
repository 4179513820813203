"""The training of ``verify deep_law``, two ways side by side: two GD steps, or GD to the end
against GD with the Gauss–Newton finish.

For each network, data set, p^(L)/(dn) and seed (n = 4, the claim's networks and data), trains
the same initialisation both ways (``rftheory.deep.train_gd``) and prints the GD steps (+ the
Gauss–Newton steps), the training seconds, the body's feature drift ‖Φ − Φ₀‖/‖Φ₀‖, the
projection loss at the true X on the trained features (the span residual, the attack's floor)
and ‖θ_b − θ_a‖/‖θ_a‖, then the ratios' range. The claim's training (``deep_law.Config.fraction``,
``train_gd``'s ``newton_below``) is chosen from these figures: a cheaper training must leave the
trained body, and so the attack's target, as it is.

    python benchmarks/bench_deep_fraction.py                 # fractions 0.1 and 0.5, GD to the end
    python benchmarks/bench_deep_fraction.py --fractions 0.1 0.3 --seeds 2
    python benchmarks/bench_deep_fraction.py --finish        # fraction 0.1: GD to the end, and
                                                             # GD to 1e-3 + Gauss–Newton
"""

from __future__ import annotations

import argparse
import statistics

import numpy as np

from rftheory.claims.deep_law import case_data, make_net
from rftheory.deep import train_gd


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fractions", type=float, nargs=2, default=(0.1, 0.5))
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--n", type=int, default=4)
    ap.add_argument("--ratios", type=float, nargs="+", default=(2.0, 8.0))
    ap.add_argument("--finish", action="store_true",
                    help="compare GD to the end with the Gauss–Newton finish (at the first fraction)")
    args = ap.parse_args()
    a, b = args.fractions
    if args.finish:
        ways = [dict(fraction=a, newton_below=None), dict(fraction=a)]
        label = f"fraction {a}, GD to the end → Gauss–Newton below the default loss"
    else:
        ways = [dict(fraction=a, newton_below=None), dict(fraction=b, newton_below=None)]
        label = f"fraction {a} → {b} (GD to the end)"
    print(f"{'net':6} {'data':8} {'ratio':>5} {'seed':>4}  {'steps':>13}  {'seconds':>11}  "
          f"{'drift':>13}  {'span residual':>19}  {'Δθ':>7}")
    span_r, drift_r, dtheta, sec = [], [], [], [0.0, 0.0]
    for arch in ("resnet", "vit"):
        for ds in ("sphere", "digits", "patches"):
            for ratio in args.ratios:
                for seed in range(args.seeds):
                    X, y = case_data(ds, args.n, seed)
                    net = make_net(arch, ds, args.n, ratio)
                    t = [train_gd(net, X, y, rng=seed, **way) for way in ways]
                    sec[0] += t[0].seconds
                    sec[1] += t[1].seconds
                    span_r.append(t[1].span_residual / t[0].span_residual)
                    drift_r.append(t[1].feature_change / t[0].feature_change)
                    dtheta.append(float(np.linalg.norm(t[1].theta - t[0].theta)
                                        / np.linalg.norm(t[0].theta)))
                    steps = f"{t[1].steps}+{t[1].newton_steps}"
                    print(f"{arch:6} {ds:8} {ratio:5g} {seed:4d}  {t[0].steps:5d}/{steps:<7}  "
                          f"{t[0].seconds:5.1f}/{t[1].seconds:<5.1f}  "
                          f"{t[0].feature_change:.4f}/{t[1].feature_change:.4f}  "
                          f"{t[0].span_residual:.2e}/{t[1].span_residual:.2e}  {dtheta[-1]:.1e}",
                          flush=True)
    print(f"{label}: training seconds {sec[0]:.0f} → {sec[1]:.0f}; drift ratio "
          f"{min(drift_r):.3f}–{max(drift_r):.3f}; span-residual ratio {min(span_r):.3f}–"
          f"{max(span_r):.3f} (median {statistics.median(span_r):.3f}); Δθ {min(dtheta):.1e}–"
          f"{max(dtheta):.1e} over {len(span_r)} trainings")


if __name__ == "__main__":
    main()
