"""Same seeds → same JSON: record every command's ``--json`` output, and compare two records.

A refactoring must not move a number. This script runs a fixed list of CLI commands at fixed
seeds against one source tree and keeps each command's JSON; ``compare`` then checks two such
records key by key, ignoring only provenance (``produced_by`` and the like: digests, command
lines, timestamps, versions, hosts) and wall/CPU times, which no refactoring can hold still.

Usage::

    # record the code at SRC (a checkout or `git archive` of a commit) into DIR
    OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 python benchmarks/json_regression.py record SRC DIR
    # compare two records: exit 0 when every command's numbers are identical, 1 otherwise
    python benchmarks/json_regression.py compare DIR_BEFORE DIR_AFTER

``record`` runs ``python -c 'from rftheory.cli import main; ...'`` with ``PYTHONPATH=SRC``, so
the same interpreter and packages run both trees; worker processes inherit the path. Numbers
are compared exactly (``==``; NaN equals NaN): V is bit-exact and the code paths are the same
on one machine, so a refactoring that keeps the arithmetic keeps every bit. Run both records
on the same machine with the same BLAS threads.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# Every command at fixed seeds. Claims whose --quick run takes under ~1 min on 2 cores.
QUICK_CLAIMS = ("kernel_concentration", "law", "theorem1", "theorem2", "single_sample",
                "sign", "nhat", "twolayer_law")

COMMANDS: dict[str, list[str]] = {
    "activation_relu+tanh": ["activation", "relu+tanh", "--json"],
    "activation_relu": ["activation", "relu", "--json", "--order", "16"],
    "activation_expr_exact": ["activation", "relu(z) + 0.5*tanh(z)", "--method", "exact",
                              "--order", "8", "--json"],
    "activation_tanh_mpmath": ["activation", "tanh", "--method", "mpmath", "--order", "8",
                               "--digits", "20", "--json"],
    "kernel_relu": ["kernel", "relu", "--d", "5", "--n", "20", "--p", "100,400", "--seed", "3",
                    "--reps", "2", "--json", "--no-progress"],
    "reconstruct_sphere": ["reconstruct", "--activation", "relu+tanh", "--d", "5", "--n", "4",
                           "--p-mult", "2", "--seed", "1", "--json", "--no-progress"],
    "reconstruct_sphere_lbfgs": ["reconstruct", "--activation", "tanh", "--d", "4", "--n", "3",
                                 "--p-mult", "2", "--seed", "2", "--method", "lbfgs",
                                 "--max-steps", "300", "--json", "--no-progress"],
    "reconstruct_digits": ["reconstruct", "--data", "digits", "--n", "3", "--p-mult", "1",
                           "--seed", "0", "--max-steps", "200", "--json", "--no-progress"],
    "report_quick": ["report", "relu+tanh", "--quick", "--json", "--no-figures",
                     "--no-progress", "--out", "{tmp}"],
    **{f"verify_{c}": ["verify", c, "--quick", "--json", "--no-figures", "--no-progress",
                       "--out", "{tmp}"] for c in QUICK_CLAIMS},
    "sweep_law_small": ["sweep", "run", "{src}/examples/law_small.toml", "--workers", "2",
                        "--json", "--no-figures", "--no-progress", "--out", "{tmp}/sweep"],
}

# Keys whose values are provenance or timing: never compared (at any depth).
IGNORED_KEYS = frozenset({
    "produced_by", "digests", "source_digests", "command", "argv", "timestamp", "created",
    "started", "finished", "version", "versions", "python", "numpy", "platform", "host",
    "hostname", "environment", "git", "cpu_seconds", "wall_seconds", "seconds", "elapsed",
    "elapsed_s", "cpu_s", "wall_s", "time_s", "duration", "duration_s", "store", "path",
    "out", "files", "figures", "json", "pdf", "png", "date", "sweep_seconds", "sources", "file",
    "started_at", "finished_at", "pid",
})


def record(src: Path, dest: Path, only: list[str] | None = None) -> int:
    """Run every command against source tree `src`, writing ``dest/<name>.json``."""
    dest.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, PYTHONPATH=str(src.resolve()))
    env.setdefault("OPENBLAS_NUM_THREADS", "1")
    env.setdefault("OMP_NUM_THREADS", "1")
    failures = 0
    for name, argv in COMMANDS.items():
        if only and name not in only:
            continue
        with tempfile.TemporaryDirectory() as tmp:
            args = [a.format(tmp=tmp, src=src.resolve()) for a in argv]
            t0 = time.perf_counter()
            proc = subprocess.run(
                [sys.executable, "-c",
                 "import sys; from rftheory.cli import main; sys.exit(main(sys.argv[1:]))", *args],
                env=env, cwd=tmp, capture_output=True, text=True)
            wall = time.perf_counter() - t0
        (dest / f"{name}.stdout").write_text(proc.stdout)
        (dest / f"{name}.stderr").write_text(proc.stderr)
        (dest / f"{name}.rc").write_text(str(proc.returncode))
        print(f"{name}: rc={proc.returncode} wall={wall:.0f}s (under load)", flush=True)
        failures += proc.returncode not in (0, 1)
    return failures


def _load(path: Path):
    text = path.read_text()
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        # commands that print one JSON document per line (progress, rows)
        return [json.loads(line) for line in text.splitlines() if line.strip()]


def _diff(a, b, where: str, out: list[str]) -> None:
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            if k in IGNORED_KEYS:
                continue
            if k not in a or k not in b:
                out.append(f"{where}.{k}: only in {'after' if k not in a else 'before'}")
                continue
            _diff(a[k], b[k], f"{where}.{k}", out)
    elif isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            out.append(f"{where}: length {len(a)} != {len(b)}")
        for i, (x, y) in enumerate(zip(a, b)):
            _diff(x, y, f"{where}[{i}]", out)
    elif isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return
    elif a != b or type(a) is not type(b):
        out.append(f"{where}: {a!r} != {b!r}")


def compare(before: Path, after: Path) -> int:
    """Compare two records; print each difference; return the number of differing commands."""
    bad = 0
    names = sorted(p.stem for p in before.glob("*.rc"))
    for name in names:
        diffs: list[str] = []
        rc_a = (before / f"{name}.rc").read_text()
        rc_b_path = after / f"{name}.rc"
        if not rc_b_path.exists():
            print(f"{name}: MISSING after")
            bad += 1
            continue
        if rc_a != rc_b_path.read_text():
            diffs.append(f"exit status {rc_a} != {rc_b_path.read_text()}")
        try:
            _diff(_load(before / f"{name}.stdout"), _load(after / f"{name}.stdout"), "$", diffs)
        except json.JSONDecodeError as exc:
            diffs.append(f"not JSON: {exc}")
        if diffs:
            bad += 1
            print(f"{name}: {len(diffs)} difference(s)")
            for d in diffs[:20]:
                print("   ", d)
        else:
            print(f"{name}: identical")
    print(f"{len(names) - bad}/{len(names)} commands identical")
    return bad


def main(argv: list[str]) -> int:
    if len(argv) >= 3 and argv[0] == "record":
        return 1 if record(Path(argv[1]), Path(argv[2]), argv[3:] or None) else 0
    if len(argv) == 3 and argv[0] == "compare":
        return 1 if compare(Path(argv[1]), Path(argv[2])) else 0
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
