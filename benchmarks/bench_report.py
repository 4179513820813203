"""Wall time of ``rftheory report`` (:func:`rftheory.report.activation_card`) per size and section.

For each activation and size: the card's measured wall seconds per section (Hermite and
verdicts, K(t) against Monte Carlo, concentration, empirical law, sign check) and in total, and
the measured seconds per optimiser step of the law's reconstructions.

Usage::

    python benchmarks/bench_report.py                          # relu+tanh and step, quick + default
    python benchmarks/bench_report.py --sizes full --activations relu+tanh

Timings on a shared machine vary with its load; the float64 GEMM rate printed alongside says how
fast it was. The card's numbers do not depend on ``--workers``.
"""

from __future__ import annotations

import argparse
import os

from bench_reconstruct_success import gemm_gflops  # this folder is on sys.path when run

from rftheory.report import SIZES, activation_card


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--activations", default="relu+tanh,step")
    parser.add_argument("--sizes", default="quick,default")
    parser.add_argument("--workers", type=int, default=None)
    args = parser.parse_args(argv)
    print(f"machine: {os.cpu_count()} CPUs, float64 GEMM {gemm_gflops():.1f} GFLOP/s")
    header = ("activation", "size", "total s", "hermite", "K(t)", "concentr.", "law",
              "sign", "ms/step")
    print("  ".join(f"{h:>10}" for h in header))
    for activation in args.activations.split(","):
        for size in args.sizes.split(","):
            card = activation_card(activation, SIZES[size], workers=args.workers)
            sec = card.cost["seconds"]
            rec = [c for c in card.law.cells if c["kind"] == "reconstruction"]
            per_step = sum(c["seconds"] for c in rec) / max(1, sum(c["steps"] for c in rec))
            row = (activation, size, f"{sec['total']:.1f}",
                   f"{sec['hermite_and_verdicts']:.1f}", f"{sec['kernel_curve']:.1f}",
                   f"{sec['concentration']:.1f}", f"{sec['empirical_law']:.1f}",
                   f"{sec['sign_check']:.1f}", f"{1e3 * per_step:.2f}")
            print("  ".join(f"{v:>10}" for v in row), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
