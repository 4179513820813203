"""Per-iteration cost of the default attack at the demo's sizes, and a bit-identity check.

At the sizes of ``rftheory verify law`` (d = 5..10, n = 10..20, p = dn = 50..200) one LM
iteration of ``reconstruct(method="varpro")`` does little arithmetic: its cost is the Python
overhead of the calls it makes (namespace lookups, wrapped array functions, the activation's
program, small solves). This script measures that cost and checks that making it smaller did
not change a single number.

Modes::

    python benchmarks/bench_step_overhead.py                  # ms per iteration, demo sizes
    python benchmarks/bench_step_overhead.py --steps 500 --repeat 3
    python benchmarks/bench_step_overhead.py --calls          # + Python calls per iteration
    python benchmarks/bench_step_overhead.py --dump ref.npz   # the identity cells' results
    python benchmarks/bench_step_overhead.py --compare ref.npz
    python benchmarks/bench_step_overhead.py --path both          # small-problem vs streamed path

*Timing.* For each size, ``reconstruct`` of seed 0's model runs ``--steps`` LM iterations (the
p = dn cells never reach the tolerance, so they spend the whole budget); the wall time of the
attack divided by its iterations is printed, best of ``--repeat`` runs, in wall and in process
CPU seconds (the CPU figure is less disturbed by other processes on a loaded machine), with the
float64 GEMM rate (a probe of the machine's load) before and after. Compare two versions of the code back to
back on the same machine: on a loaded machine absolute figures are ~2x a quiet one's, their
ratio holds. ``--calls`` adds one profiled run per size and prints the Python function calls per
iteration, which no load changes (the overhead this script is about is mostly those calls).

*Paths.* ``--path small`` (the default attack: numpy problems with p·d ≤
:data:`rftheory.varpro.SMALL_WEIGHTS` take the small-problem path), ``--path streamed`` (the
streamed path forced, by setting that threshold to 0 in this process), ``--path both`` (one
after the other, on the same problems). The two paths agree to rounding, not to the bit, so
their iteration counts may differ after the first few hundred iterations; the figure is per
iteration.

*Identity.* ``--dump`` runs the cells of :data:`IDENTITY_CELLS` (the pipeline's
:func:`rftheory.pipeline.run_reconstruction`, as ``verify law`` runs them) and stores steps,
final loss, the loss history, evaluations, passes, the three ρ and X̂; ``--compare`` runs them
again and requires every one to be bit-identical (exit status 1 otherwise). Run ``--dump`` on
the reference tree (e.g. main) and ``--compare`` on the changed one, with the same numpy/BLAS.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
import time

import numpy as np

from rftheory.pipeline import run_reconstruction

from bench_reconstruct_success import gemm_gflops  # the same load probe (benchmarks/ is on the path)

#: Demo sizes (d, n, p = dn) of ``rftheory verify law``'s p = dn cells (its grid (3, 3), (12, 3),
#: (12, 12)), and the (10, 10) cell of the earlier demo.
DEMO_SIZES = ((3, 3, 9), (12, 3, 36), (12, 12, 144), (10, 10, 100))
#: (activation, d, n, p, seed, max_steps) of the identity check: the demo's p = dn cells for
#: both activations, a converging cell (p = 1.5dn), a p < dn cell, and a large cell that takes
#: the matrix-free (cg) solver.
IDENTITY_CELLS = (
    ("relu+tanh", 10, 10, 100, 0, 3000),
    ("relu+tanh", 5, 20, 100, 0, 3000),
    ("relu+tanh", 10, 10, 150, 1, 3000),
    ("relu", 10, 10, 100, 0, 3000),
    ("relu", 5, 10, 50, 2, 3000),
    ("relu+tanh", 10, 10, 60, 0, 1500),
    ("relu+tanh", 80, 16, 1280, 0, 100),
)


def _key(cell: tuple) -> str:
    return "{}_d{}_n{}_p{}_s{}_m{}".format(*cell)


def run_cell(cell: tuple) -> dict:
    activation, d, n, p, seed, max_steps = cell
    run = run_reconstruction(activation=activation, d=d, n=n, p=p, seed=seed,
                             max_steps=max_steps)
    res = run.result
    return {"steps": np.int64(res.steps), "loss": np.float64(res.loss),
            "history": np.asarray(res.history, dtype=np.float64),
            "evaluations": np.int64(res.evaluations), "passes": np.int64(res.passes),
            "rho": np.array([run.matchings[v].rho for v in ("abs", "signed", "sign_invariant")]),
            "X_hat": np.asarray(res.X_hat, dtype=np.float64), "seconds": run.seconds}


def dump(path: str) -> None:
    arrays = {}
    for cell in IDENTITY_CELLS:
        out = run_cell(cell)
        print(f"{_key(cell)}: steps {out['steps']}, loss {out['loss']!r}, "
              f"rho {out['rho'][0]:.3e}, {out['seconds']:.1f} s", flush=True)
        for name, value in out.items():
            if name != "seconds":
                arrays[f"{_key(cell)}/{name}"] = value
    np.savez(path, **arrays)
    print(f"wrote {path}")


def compare(path: str) -> int:
    ref = np.load(path)
    bad = 0
    for cell in IDENTITY_CELLS:
        out = run_cell(cell)
        diffs = []
        for name, value in out.items():
            if name == "seconds":
                continue
            want = ref[f"{_key(cell)}/{name}"]
            if want.shape != np.shape(value) or want.tobytes() != np.asarray(value).tobytes():
                diffs.append(name)
        bad += bool(diffs)
        print(f"{_key(cell)}: {'IDENTICAL' if not diffs else 'DIFFERS in ' + ', '.join(diffs)} "
              f"(steps {out['steps']}, loss {out['loss']!r}, {out['seconds']:.1f} s)", flush=True)
    print("all identical" if not bad else f"{bad} cell(s) differ")
    return 1 if bad else 0


def timing(steps: int, repeat: int, activation: str, count_calls: bool = False,
           path: str = "small") -> None:
    from rftheory import varpro
    from rftheory.data import gaussian_labels, sphere_points
    from rftheory.features import RandomFeatures, train_min_norm
    from rftheory.reconstruct import reconstruct

    if path == "both":
        timing(steps, repeat, activation, count_calls, "small")
        timing(steps, repeat, activation, count_calls, "streamed")
        return
    small_weights = varpro.SMALL_WEIGHTS
    varpro.SMALL_WEIGHTS = small_weights if path == "small" else 0
    print(f"path: {path}; GEMM probe before: {gemm_gflops(256, 20):.1f} GFLOP/s")
    total = total_cpu = 0.0
    for d, n, p in DEMO_SIZES:
        X, Y = sphere_points(n, d, seed=0), gaussian_labels(n, seed=0)
        features = RandomFeatures(activation, d=d, p=p, seed=0, v_cache_bytes=2**30)
        theta = train_min_norm(features, X, Y).theta
        best, best_cpu = np.inf, np.inf
        for _ in range(repeat):
            t0, c0 = time.perf_counter(), time.process_time()
            res = reconstruct(features, theta, n, seed=0, max_steps=steps)
            wall, cpu = time.perf_counter() - t0, time.process_time() - c0
            best, best_cpu = min(best, wall / res.steps), min(best_cpu, cpu / res.steps)
        total += best
        total_cpu += best_cpu
        calls = ""
        if count_calls:  # Python-level calls per iteration: a figure the machine's load cannot move
            profile = cProfile.Profile()
            profile.enable()
            counted = reconstruct(features, theta, n, seed=0, max_steps=steps)
            profile.disable()
            n_calls = pstats.Stats(profile).total_calls  # type: ignore[attr-defined]
            calls = f", {n_calls / counted.steps:.0f} Python calls/iteration"
        print(f"{activation} d={d} n={n} p={p}: {1e3 * best:.3f} ms/iteration wall, "
              f"{1e3 * best_cpu:.3f} CPU (best of {repeat}, {res.steps} iterations, "
              f"{res.evaluations} evaluations{calls})", flush=True)
    print(f"mean over sizes: {1e3 * total / len(DEMO_SIZES):.3f} ms/iteration wall, "
          f"{1e3 * total_cpu / len(DEMO_SIZES):.3f} CPU")
    print(f"GEMM probe after: {gemm_gflops(256, 20):.1f} GFLOP/s")
    varpro.SMALL_WEIGHTS = small_weights


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300, help="LM iterations per timed run")
    parser.add_argument("--repeat", type=int, default=3, help="timed runs per size (best kept)")
    parser.add_argument("--activation", default="relu+tanh")
    parser.add_argument("--calls", action="store_true",
                        help="also count Python function calls per iteration (cProfile)")
    parser.add_argument("--path", choices=("small", "streamed", "both"), default="small",
                        help="the attack's evaluation path (default: the small-problem path)")
    parser.add_argument("--dump", metavar="FILE", help="store the identity cells' results")
    parser.add_argument("--compare", metavar="FILE", help="check them against a --dump file")
    args = parser.parse_args(argv)
    if args.dump:
        dump(args.dump)
        return 0
    if args.compare:
        return compare(args.compare)
    timing(args.steps, args.repeat, args.activation, args.calls, args.path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
