"""Write ``docs/_gallery/``: the results of ``rftheory verify CLAIM --quick`` the docs draw from.

The docs build draws every claim's figure with the claim's own ``plot`` function from these
results (``docs/_ext/rftheory_docs.py``), because running the claims took 19 min one after
another on the shared two-core machine (the law and theorem2 ~5 min each), too long for every CI
build. Rerun this script (kept, run by hand) when a
claim's numbers change — the optimiser, a claim's QUICK config::

    python docs/_precompute/gallery_results.py                 # every claim
    python docs/_precompute/gallery_results.py law theorem2    # some
    python docs/_precompute/gallery_results.py --from DIR law  # keep DIR/law.json of a run
                                                               # already made with that command

Each result is stored as the command wrote it, less its ``figures`` (paths on the machine that
ran it); ``MANIFEST.json`` records, per claim, the command, the commit it ran at (with
``+dirty`` when the tree had changes; null for results kept with ``--from``), the date and its
wall time. Same command, same seed →
same numbers on the same machine; other machines may differ in the last digits (BLAS).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "docs" / "_gallery"


def _commit() -> str | None:
    try:
        head = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=ROOT, text=True,
                              capture_output=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                               cwd=ROOT, text=True, capture_output=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    return head + ("+dirty" if dirty.strip() else "")


def store(claim: str, source: Path, wall: float | None, commit: str | None) -> None:
    """Copy ``source`` (a claim's JSON result) into :data:`OUT` and record it in the manifest
    (``commit``: where it ran, None when not known)."""
    result = json.loads(source.read_text())
    if result.get("claim") != claim or not result.get("quick"):
        raise SystemExit(f"{source} is not a --quick result of {claim}")
    result.pop("figures", None)
    (OUT / f"{claim}.json").write_text(json.dumps(result, indent=1, sort_keys=True) + "\n")
    manifest_path = OUT / "MANIFEST.json"
    manifest = json.loads(manifest_path.read_text()) if manifest_path.is_file() else {"runs": {}}
    manifest["runs"][claim] = {
        "command": f"rftheory verify {claim} --quick",
        "commit": commit,
        "date": result.get("environment", {}).get("date"),
        "wall_seconds": result.get("wall_seconds", wall),
    }
    manifest["runs"] = dict(sorted(manifest["runs"].items()))
    manifest_path.write_text(json.dumps(manifest, indent=1) + "\n")
    print(f"{OUT / (claim + '.json')}: {manifest['runs'][claim]['wall_seconds']} s")


def main(argv: list[str] | None = None) -> int:
    sys.path.insert(0, str(ROOT))
    from rftheory.claims import CLAIMS

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("claims", nargs="*", help=f"claims to run (default: all of {CLAIMS})")
    parser.add_argument("--from", dest="source", type=Path,
                        help="keep DIR/CLAIM.json of runs already made instead of running")
    args = parser.parse_args(argv)
    claims = args.claims or list(CLAIMS)
    unknown = sorted(set(claims) - set(CLAIMS))
    if unknown:
        parser.error(f"unknown claims: {', '.join(unknown)}")
    OUT.mkdir(exist_ok=True)
    for claim in claims:
        if args.source:
            store(claim, args.source / f"{claim}.json", None, None)
            continue
        with tempfile.TemporaryDirectory() as tmp:
            start = time.perf_counter()
            subprocess.run([sys.executable, "-m", "rftheory.cli", "verify", claim, "--quick",
                            "--out", tmp, "--no-figures"], cwd=ROOT, check=True)
            store(claim, Path(tmp) / f"{claim}.json", round(time.perf_counter() - start, 1),
                  _commit())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
