"""The law claim's tables (private to :mod:`rftheory.claims.law`, which exports
:func:`summary`): every line is drawn from a result dict alone. Memory: the text only.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

from rftheory.claims._law_sweep import target_text
from rftheory.metrics import FAILURE_KINDS, run_kind
from rftheory.output import format_table

def kinds(cells: Sequence[dict[str, Any]], variant: str, rho_success: float) -> dict[str, int]:
    """Counts of :data:`rftheory.metrics.FAILURE_KINDS` among reconstruction cells.

    Parameters
    ----------
    cells : sequence of dict
        Reconstruction cells.
    variant : str
        The ρ that decides success.
    rho_success : float
        ρ below which a run succeeded.

    Returns
    -------
    dict
        ``{kind: count}`` for every kind.
    """
    out = dict.fromkeys(FAILURE_KINDS, 0)
    for c in cells:
        out[run_kind(c, variant, rho_success=rho_success)] += 1
    return out


def kind_totals(per_grid: Sequence[dict[str, Any]], variant: str) -> dict[str, int]:
    """The failure kinds of every reconstruction of the grid, summed.

    Parameters
    ----------
    per_grid : sequence of dict
        The per-(d, n) entries of a law result (their rows' ``kinds_<variant>``).
    variant : str
        The ρ variant.

    Returns
    -------
    dict
        ``{kind: count}`` for every kind.
    """
    out = dict.fromkeys(FAILURE_KINDS, 0)
    for g in per_grid:
        for row in g["rows"]:
            for k, v in row[f"kinds_{variant}"].items():
                out[k] += v
    return out



def finite(x: Any) -> bool:
    """Whether ``x`` is a finite number (saved JSON writes NaN as a string or null).

    Parameters
    ----------
    x : object
        Anything.

    Returns
    -------
    bool
        True for a finite int or float.
    """
    return isinstance(x, (int, float)) and math.isfinite(x)


def fmt(x: Any, spec: str = ".2f") -> str:
    """``x`` formatted with ``spec``, or "—" when it is not a finite number.

    Parameters
    ----------
    x : object
        The number.
    spec : str
        A format specification (default ``".2f"``).

    Returns
    -------
    str
        The text.
    """
    return format(x, spec) if finite(x) else "—"


def _threshold_table(name: str, per_grid: list[dict[str, Any]], variant: str,
                     level: float, profile: float | None = None) -> str:
    rows = []
    for g in per_grid:
        th = g["data"][variant]
        lo, hi = th["interval_over_dn"]
        status = "" if th["status"] == "ok" else f" ({th['status']})"
        kinds = kind_totals([g], variant)
        rows.append([g["d"], g["n"], fmt(g["label"]["p_star_over_n"]),
                     fmt(th["p_star_over_dn"], ".3f") + status,
                     f"[{fmt(lo, '.3f')}, {fmt(hi, '.3f')}]", fmt(th["width"], ".3f"),
                     fmt(th["crossing_over_dn"], ".3f"),
                     fmt(g["data"]["sign_invariant"]["p_star_over_dn"], ".3f"),
                     f"{kinds['spurious']}/{kinds['unfinished']}",
                     f"{g['seconds']:.0f}"])
    headers = ["d", "n", "p*_label/n", "p*_data/(dn) fit",
               f"{level:.0%} interval" if profile in (None, level)
               else f"{level:.0%} interval ({profile:.0%} profile)", "width σ",
               "crossing", "(sign-inv ρ)", "spurious/unfinished", "Σ cell s"]
    return f"φ = {name}\n" + format_table(headers, rows)


def _kinds_table(per_grid: list[dict[str, Any]], variant: str) -> str:
    """Per (d, n), the failure kinds at each p/(dn): ``s`` spurious, ``u`` unfinished."""
    ratios = sorted({round(r["p_over_dn"], 3) for g in per_grid for r in g["rows"]})
    rows = []
    for g in per_grid:
        cells = {round(r["p_over_dn"], 3): r[f"kinds_{variant}"] for r in g["rows"]}
        rows.append([f"({g['d']}, {g['n']})"] + [
            (f"{k['success']}✓ {k['spurious']}s {k['unfinished']}u" if (k := cells.get(x)) else "")
            for x in ratios])
    return ("runs per p/(dn): ✓ success, s spurious interpolant (loss ≤ tol, ρ large), "
            "u unfinished descent (loss > tol)\n"
            + format_table(["(d, n)"] + [f"{x:g}" for x in ratios], rows))


def _fit_line(fit: dict[str, Any]) -> str:
    if not finite(fit["exponents"]["d"]):
        return f"fit of log p*_data (ρ_{fit['variant']}): not enough located (d, n)"
    e, iv, m = fit["exponents"], fit["intervals"], fit["models"]
    aic = ", ".join(f"p* ∝ {k}: {m[k]['aic']:.1f}" for k in ("dn", "n", "d") if k in m)
    return (f"fit p*_data ∝ d^b n^c (ρ_{fit['variant']}, {fit['points']} points): "
            f"b = {e['d']:.2f} [{fmt(iv['d'][0])}, {fmt(iv['d'][1])}], "
            f"c = {e['n']:.2f} [{fmt(iv['n'][0])}, {fmt(iv['n'][1])}] ({fit['level']:.0%}, "
            f"errors ×{fit['scale']:.2f}); AIC {aic} (free fit {m['free']['aic']:.1f}; lowest: "
            f"{fit['best_model']}); the law predicts b = c = 1")


def _pooled_line(pooled: dict[str, Any], variant: str) -> str:
    th = pooled[variant]
    lo, hi = th["interval_over_dn"]
    return (f"pooled over every (d, n): p*/(dn) = {fmt(th['p_star_over_dn'], '.3f')} "
            f"[{fmt(lo, '.3f')}, {fmt(hi, '.3f')}] ({th['status']}, width σ = "
            f"{fmt(th['width'], '.3f')}; crossing rule {fmt(th['crossing'], '.3f')})")


def _design_line(result: dict[str, Any]) -> list[str]:
    """The sequential design's outcome per (d, n), when the run had one."""
    if result.get("resolution") is None:
        return []
    parts = []
    # results written before the criterion existed resolved every side
    sides = result.get("criterion", "sides") == "sides"
    for g in result["per_grid"]:
        design = g.get("design", {})
        reach = (f"widest side {fmt(design.get('largest_side_over_dn'), '.3f')}·dn" if sides
                 else f"widest interval {fmt(design.get('widest_interval_over_dn'), '.3f')}·dn")
        parts.append(f"({g['d']}, {g['n']}) {design.get('runs')} runs (+{design.get('added')}"
                     f" in {design.get('rounds', '?')} rounds), {reach}"
                     + ("" if design.get("resolved") else " — NOT resolved (cap reached)"))
    target = target_text(result["resolution"], "sides" if sides else "width")
    return [f"sequential design ({target}, at most {result['max_added']} added runs per "
            f"(d, n)): " + "; ".join(parts)]


def summary(result: dict[str, Any]) -> str:
    """Thresholds per (d, n), failure kinds, the scaling fit and the verdict, as tables.

    Parameters
    ----------
    result : dict
        A result of :func:`rftheory.claims.law.run` (or :func:`~rftheory.claims.law.analyse`).

    Returns
    -------
    str
        The tables, one line per row.
    """
    variant = result["success_variant"]
    v = result["verdict"]
    lines = []
    if "missing" in result:
        m = result["missing"]
        lines.append(
            f"PARTIAL: {m['cells']} of the {m['of']} cells of the grid are missing"
            + (f" ({m['failed']} failed)" if m["failed"] else "")
            + (" — " + "; ".join(f"{k}: {v}" for k, v in m["by_grid"].items()) if m["by_grid"]
               else "")
            + " — every number below is fitted to the cells there are; no verdict")
    lines += [
        f"law of data reconstruction — {result['seeds']} seeds, "
        f"p/(dn) in {min(result['ratios']):g}..{max(result['ratios']):g}, "
        f"success = ρ_{variant} < {result['rho_success']} (p*_data: probit fit of every run, "
        f"profile-likelihood interval; crossing: the interpolation rule, secondary), "
        f"optimiser budget {result['max_steps']} steps"
        + (f" (from {result['from_export']})" if result.get("from_export") else ""),
        _threshold_table(result["activation"], result["per_grid"], variant, result["level"],
                         result.get("profile_level")),
        *_design_line(result),
        _pooled_line(result["pooled"], variant),
        _kinds_table(result["per_grid"], variant),
        f"spread of p*_data over the grid: max/min of p*/(dn) = {fmt(v['spread_p_star_over_dn'])}, "
        f"of p*/n = {fmt(v['spread_p_star_over_n'])}",
        _fit_line(result["fits"][variant]),
    ]
    for name, other in result.get("by_activation", {}).items():
        lines += [f"compared: φ = {name}, {other.get('seeds', result['seeds'])} seeds",
                  _threshold_table(name, other["per_grid"], variant, result["level"]),
                  _pooled_line(other["pooled"], "sign_invariant") + " (sign-invariant ρ)",
                  _fit_line(other["fits"][variant]), _fit_line(other["fits"]["sign_invariant"]),
                  "compared, not part of the verdict"]
    versions = result.get("code_versions") or []
    if len(versions) > 1:
        lines.append(f"note: the cells were stored by {len(versions)} versions of the code "
                     f"({', '.join(versions)}; a version without '+src.' predates the digest): "
                     f"compare them only where those versions compute the same numbers; fresh "
                     f"stores recompute every cell with one")
    if result.get("missing", {}).get("cells"):
        lines.append(f"no verdict: {result['missing']['cells']} cells of the grid are missing "
                     f"(a partial analysis; the checks so far — label threshold at n: "
                     f"{v['label_threshold_is_n']}; collapse in dn: {v['collapse_in_dn']})")
        return "\n".join(lines)
    lines.append(
        f"verdict ({result['activation']}): {'SUPPORTED' if v['supported'] else 'NOT SUPPORTED'} "
        f"— label threshold at n: {v['label_threshold_is_n']}; fails at p = n: "
        f"{v['fails_at_p_equal_n']}; succeeds at the top: {v['succeeds_at_largest_ratio']}; "
        f"thresholds located: {v['data_thresholds_located']}; collapse in dn (b, c ∋ 1, ∌ 1/2): "
        f"{v['collapse_in_dn']}")
    return "\n".join(lines)


def steps_table(curve: dict[str, Any]) -> str:
    """The success fraction against the step budget as a table (one column per p/(dn)).

    Parameters
    ----------
    curve : dict
        A result of :func:`rftheory.claims.law.success_against_steps`.

    Returns
    -------
    str
        A header line and the table.
    """
    keys = [k for k in curve if isinstance(curve[k], dict) and "success" in curve[k]]
    shown = [b for b in (30, 100, 300, 500, 1000, 1500, 2000, 2500, 3000, 5000, 10000, 20000)
             if b <= curve["budget"]]
    rows = [[b] + [f"{sum(s <= b for s in curve[k]['steps_of_successes'])}/{curve[k]['runs']}"
                   for k in keys] for b in shown]
    head = "; ".join(f"{k}·dn: {curve[k]['runs']} runs (n ∈ {curve[k]['ns']}), "
                     f"{curve[k]['successes']} succeed, {curve[k]['unfinished']} unfinished at "
                     f"the budget" for k in keys)
    return (f"success against the step budget, d = {curve['d']} (ρ_{curve['variant']} < 0.1, "
            f"from the runs' step counts; runs' budget {curve['budget']}): {head}\n"
            + format_table(["budget"] + [f"{k}·dn" for k in keys], rows))
