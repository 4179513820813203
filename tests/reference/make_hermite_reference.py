"""Write ``hermite_reference.json``: high-precision Hermite coefficients of the registry.

The values are produced by an algorithm independent of :mod:`rftheory.hermite`: mpmath's adaptive
tanh-sinh quadrature (``mpmath.quad``) of φ(x) He_k(x) ϕ(x) / sqrt(k!), with He_k from mpmath's
physicists' Hermite function (He_k(x) = 2^(-k/2) H_k(x/√2)) instead of a recurrence, over
[-L, L] cut into half-unit intervals plus the exact kinks. Only the activation's own mpmath form
is shared with the library.

Run from the repository root (tens of minutes on one core; the file is rewritten after every
activation, so an interrupted run keeps its work and ``--only`` can finish it)::

    python tests/reference/make_hermite_reference.py [--jobs 2] [--only NAME ...]

Notes
-----
Truncation: every |h_k ϕ| is below 0.4334 e^(-x²/4) (Cramér), and the registry's activations grow
at most like |x|^4, so the part of the integral beyond L = 22 is below 1e-48. mpmath.quad reports
its own error estimate per value, stored as ``quad_error``; the stored values carry ``DIGITS``
significant digits computed at ``DPS`` working digits.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import pathlib
import sys
import time

import mpmath
import sympy as sp

from rftheory.activations import ACTIVATIONS, get_activation

DPS = 40
DIGITS = 36
RADIUS = 22
#: Orders stored: all of 0..12, then every fourth one up to 100 (covering both parities).
ORDERS = sorted(set(range(13)) | set(range(15, 101, 4)) | set(range(16, 101, 4)))
OUTPUT = pathlib.Path(__file__).with_name("hermite_reference.json")


def _breakpoints(exact_kinks) -> list:
    points = {mpmath.mpf(i) / 2 for i in range(-2 * RADIUS, 2 * RADIUS + 1)}
    points.update(mpmath.mpf(sp.N(k, DPS + 5)) for k in exact_kinks if -RADIUS < float(k) < RADIUS)
    return sorted(points)


def reference_for(name: str) -> dict:
    """Coefficients μ_k (k in ORDERS) and E[φ²] of one registry activation."""
    mpmath.mp.dps = DPS
    act = get_activation(name)
    points = _breakpoints(act.exact_kinks)
    root2 = mpmath.sqrt(2)
    # quad revisits the same tanh-sinh nodes for every k: evaluate φ(x) ϕ(x) once per node.
    cache: dict = {}

    def weighted_phi(x):
        if x not in cache:
            cache[x] = act.mp(x) * mpmath.npdf(x)
        return cache[x]

    values, errors = [], []
    for k in ORDERS:
        scale = 1 / (mpmath.sqrt(mpmath.factorial(k)) * mpmath.mpf(2) ** (mpmath.mpf(k) / 2))

        def integrand(x, k=k, scale=scale):
            return weighted_phi(x) * mpmath.hermite(k, x / root2) * scale

        value, error = mpmath.quad(integrand, points, error=True)
        values.append(mpmath.nstr(value, DIGITS, min_fixed=1, max_fixed=0))
        errors.append(float(error))
    second, second_error = mpmath.quad(lambda x: act.mp(x) * weighted_phi(x), points, error=True)
    return {
        "expression": str(act.expr),
        "orders": ORDERS,
        "values": values,
        "quad_error": errors,
        "second_moment": mpmath.nstr(second, DIGITS, min_fixed=1, max_fixed=0),
        "second_moment_quad_error": float(second_error),
    }


def _write(results: dict) -> None:
    payload = {
        "description": "Hermite coefficients mu_k = E[phi(g) He_k(g)]/sqrt(k!), g ~ N(0,1)",
        "generator": "tests/reference/make_hermite_reference.py (mpmath.quad, tanh-sinh)",
        "mpmath_version": mpmath.__version__,
        "dps": DPS,
        "digits": DIGITS,
        "truncation_radius": RADIUS,
        "activations": {n: results[n] for n in ACTIVATIONS if n in results},
    }
    OUTPUT.write_text(json.dumps(payload, indent=1) + "\n")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=1, help="worker processes")
    parser.add_argument("--only", nargs="*", help="registry names to (re)compute; others are kept")
    args = parser.parse_args(argv)
    unknown = sorted(set(args.only or []) - set(ACTIVATIONS))
    if unknown:
        parser.error(f"not registry names: {', '.join(unknown)}")
    names = args.only or list(ACTIVATIONS)
    results = json.loads(OUTPUT.read_text())["activations"] if (args.only and OUTPUT.exists()) else {}
    start = time.time()
    with multiprocessing.Pool(args.jobs) as pool:
        for name, result in zip(names, pool.imap(reference_for, names)):
            results[name] = result
            _write(results)  # after every activation, so an interrupted run keeps its work
            print(f"{name}: done at {time.time() - start:.0f} s", file=sys.stderr, flush=True)
    print(f"wrote {OUTPUT}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
