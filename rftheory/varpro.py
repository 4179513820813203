"""Variable-projection Levenberg–Marquardt with basin hopping: the default reconstruction attack.

The projection loss L(X̂) = ‖P⊥_{Φ̂}θ‖²/‖θ‖² is the *variable-projection* functional of the
separable least-squares problem θ ≈ Φ̂ᵀA (Golub & Pereyra 1973): for fixed candidates X̂ the
weights A are linear and are eliminated, A = G⁺Φ̂θ, leaving the residual r(X̂) = P⊥_{Φ̂}θ, a
function of the candidates alone. This module minimises ‖r‖² by Levenberg–Marquardt (LM) on the
product of spheres, and escapes the non-zero local minima of the landscape by *monotonic basin
hopping*: perturb every candidate by a fixed angle, run LM again, keep the result if its loss is
lower. Nothing is tuned per problem and no ground truth is used; the run stops when the loss
reaches ``tol``.

Notes
-----
*Jacobian.* With a_i the weights of candidate i (a row of A, one entry per output), D_i = φ′(Vx̂_i)
and P_i = I − x̂_ix̂_iᵀ/d the projection on the sphere's tangent space at x̂_i, Kaufman's
approximation of the Jacobian (1975) is J = −(I_k ⊗ P⊥_{Φ̂}) B, where the column (i, l) of B has
entries a_ic D_i(v) (V P_i)_{vl} for the row v of V and the output c. It drops the term of the
exact VarPro Jacobian that is proportional to the residual, so Jᵀr is the exact gradient of
½‖r‖² and the Gauss–Newton model is exact at a zero. Its Gram matrix is assembled from one pass
over V without forming J:

    JᵀJ = (AAᵀ ⊗ 1_{d×d}) ∘ P (M − NᵀG⁺N) P,   M = EᵀE,  N = Φ̂E,  E[v, (i, l)] = D_i(v) V_vl,

whose cost p·(n̂d)² does not depend on the number of outputs k (*dense* solver, for small n̂d).
For large problems the LM system is solved matrix-free by preconditioned conjugate gradients
(*cg* solver): each product JᵀJw is one sweep over the stored blocks of V, Φ̂ and φ′ (two GEMMs
with V), and the preconditioner is the Kronecker approximation (C + λS) ⊗ I_d with
C_ij = (AAᵀ)_ij Σ_v D_i(v)D_j(v)‖v‖²/d, which is what JᵀJ looks like when p ≫ n̂d (in the
tangent spaces, Vᵀdiag(D_iD_j)V concentrates on a multiple of the identity). The products run
on a float32 copy of V made at the first matrix-free step and kept to the end of the run (V is
the same at every step; converting it at every step read 7.5 GB per LM iteration at d = 3072,
p = 307 200: 20–24 s CPU per LM iteration against 14–17 s without it, one thread, loaded).

*Which solver, and how exact.* The Kronecker preconditioner is good when p ≫ n̂d (at
d = 100, n = 20, p = 10dn: median 8 CG products per step to the relative residual CG_RTOL), and
poor near the counting limit, where JᵀJ is as ill-conditioned as a nearly square random matrix
(Marchenko–Pastur: condition ((1 + √c)/(1 − √c))², c = n̂d/p; c = 0.8 at 1.25dn): at (80, 8),
1.25dn, 55 % of the CG solves stop at their iteration cap short of CG_RTOL. Measured there
(seed 0, 600 LM iterations), the exact dense steps did not help: both solvers ran 25 LM runs in
the 600 iterations and stopped at the same loss level (9.7e-4 CG, 8.6e-4 dense), CG in a
quarter of the CPU time (2.6 s against 11.1 s). The LM runs' length (about 24 iterations a run)
does not change with d from 10 to 80 either; what grows with d near the limit is the number of
runs the basin hopping needs (``paper_notes/attack.md``).

*Steps.* The LM step solves (JᵀJ + λS)δ = −Jᵀr with S = diag(s_i I_d), s_i = C_ii — a damping
that is isotropic within each candidate's tangent space, so δ stays tangent — and the candidates
move by the retraction x̂ ← √d(x̂ + δ)/‖x̂ + δ‖. λ follows Nielsen's update (gain ratio of the
actual to the predicted decrease). A run of LM ends at ``tol``, when the loss fell by less than
a factor ``STALL_FACTOR`` over the last ``STALL_WINDOW`` iterations, or when no damping gives a
decrease.

*Basin hopping.* Measured (d = n = 10, relu+tanh, p = 1.25dn, 10 seeds): LM from a random start
reaches the training set in 0 of 100 starts; its local minima (loss 1e-5–3e-2) have *no*
candidate near a training point, so re-seeding the least useful rows cannot help — but
perturbing all candidates by an angle of 0.3 rad and keeping the better minimum recovers 9 of 10
seeds within 80 hops (median ~20): the landscape is a funnel. The perturbation
x̂ + σ‖x̂‖g/√d with g ~ N(0, I_d) turns x̂ by about atan(σ) rad; at d = 10, σ = 0.15 and 0.8 did
worse than 0.3 (see ``paper_notes/attack.md``). Its component along any one direction is ~σ/√d,
so σ grows as √d above d = 10, up to 0.6 (:func:`hop_angle_for`; measured with
``benchmarks/bench_attack.py --growth``: at d = 80, n = 8, 1.5dn, the median iterations to
success fell from 4895, with 4 of 6 seeds recovered, to 1336 with 6 of 6; at 1.25dn, 5 of 6
seeds recovered, against none of 3 with σ = 0.85).

*Restarts.* A walk ends after ``patience`` rounds without a 10 % gain, or after RETURNS rounds
in a row whose LM run came back to the walk's best loss (within RETURN_TOL): a funnel bottom the
hops cannot leave. Measured, relu, d = 100, n = 20, p = 10dn, seed 1: 569 iterations (34 rounds,
30 of them hops returning to loss 5.93e-4) without the second rule, 170 with it; seeds 0 and 2
unchanged (69, 58). Tried and dropped: flipping a row x̂_i → −x̂_i at each new best (ReLU's
φ(−z) = φ(z) − z suggested wrong-side rows): no flip was ever accepted at that seed nor at
d = n = 10, 1.1dn (3 seeds).

*Fresh walks from a build (d ≥ BUILD_DIMENSION).* In high dimension a random point is far from
every training point (the best of 1000 has cosine ~0.4 with a given one at d = 80), so random
restarts and the random screens of the exchanges rarely start anything: at (80, 16), 1.25·dn the
failures had no row within cos 0.99 of any training point in any walk. The residual of a set of
rows, though, carries the points they miss in its Hermite moments
(:func:`rftheory.spectral_init.residual_directions`): with one point missing and the others
right, its first moment and the top eigenvector of its second point at it with |cos| ≈ 0.9,
whatever its weight. :func:`build` therefore builds the rows of a fresh walk one at a time, each
fitted to what the rows before it leave unexplained (a matching pursuit over the sphere), and
the walk's hops and exchanges go on from there. The first walk still starts from X0 (random
rows by default): where p ≫ dn a random start converges in one LM run (~60 iterations at
(100, 20), 10·dn) and a build costs ~500. Measured (relu+tanh, 1.25·dn, the default 20 000
iterations, unseen seeds 100–111, ``benchmarks/bench_attack.py --methods varpro,ref``;
``paper_notes/attack.md``, "the build"): (80, 16) 9/12 against 5/12 without the build, (40, 8)
9/12 against 7/12, (80, 8) 8/12 as without it, in 2–6× fewer iterations; over 30 unseen seeds
(100–111, 200–205, 300–311) with the build: 26/30, 24/30 and 22/30. At 1.5·dn the median
iterations to success at d = 80 fell from 1336 to 676. Below d = 32 it did not help (scratch,
(10, 10), 1.1·dn: 1/12 against 3/12 with every walk built), so the small sizes run as before.

*A wide first walk (p ≥ 6·dn).* Far above the counting limit the landscape has no bent
funnels to search, but the first LM run from n̂ random rows often stops with the rows on all
but one or two training points (two rows on one point, or none on a point), and every repair
is a further LM run — minutes each at d = 3072. There the first walk starts from
n̂ + ⌈n̂/2⌉ random rows (:func:`wide_rows`): any superset of the training set is a zero, one LM
run puts a row on every point, and exact leave-one-out prunes the set back to n̂ (rows a hair
apart merged first, :func:`wide_start`). Measured on pooled image patches (d = 768, relu,
n = 10, p = 10·dn, 9 seeds): median 419 passes over V against 877, the worst 1972 against
5015 (``paper_notes/attack.md``, "a wide start"). Below the rule nothing changes, not even
the random stream.

*The linearised exchange (near the counting limit).* Near p = dn the search's minima have the
training points of large weight |a_i| found, each row 1–6° off, and those of small weight
missing: the bent rows make up for them. Against the residual of such rows a missing point is
nearly invisible (the plain screen ranked the smallest-weight point up to 394th of 1000 at
(10, 10), 1.1·dn, with the others 2° off, and up to 952nd with them 4° off), because what it
adds is mostly what small motions of the bent rows add too. With the kept rows linearised — their features and tangent derivatives, q·d directions,
projected out of θ and of every pool point's features — it ranks first (12 of 12 cases, by a
factor 1.3–2.3 over the runner-up). So where the problem is small, d < BUILD_DIMENSION (a
random pool has a point near the missing one) and p < LINEARISED_RATIO·q·d, the exchanges take
the point of highest :func:`linearised_gain` as the new row; elsewhere, e.g. at d ≥ 32 and far
above the limit, every run is what it was, to the bit. Measured (relu+tanh, (10, 10), 1.1·dn,
the default budget, 83 unseen seeds in four blocks; ``paper_notes/attack.md``, "the linearised
exchange"): 31/83 recovered against 17/83 with the plain exchange (every block moved the same
way; Fisher's exact test p ≈ 0.025), at the same CPU per iteration.

*Overhead.* At the demo's sizes (n̂d ≈ 100, p ≈ 100) an iteration does little arithmetic and
its cost is per-call Python overhead, so the problem checks θ once (not per evaluation), the
linearisation reuses the kept blocks (V, φ, φ′) and Gram matrix of the evaluation at the same
point (and its Cholesky test) and V's row norms from pass to pass (V is cached), and the step's
Cholesky calls LAPACK directly. With numpy arrays the hot paths (this module's curvature pass,
:func:`rftheory.projection.projection_loss_checked`, the Gram solve, the activation's program,
the retraction) make the numpy calls that the array-API wrappers would make, without the
wrappers; any other namespace takes the array-API calls. On the streamed path (below: larger
problems) each is bit-identical to the plain path (``tests/test_varpro.py`` and the modules' tests against array_api_strict, and
``benchmarks/bench_step_overhead.py --compare`` for whole runs). Measured (2026-12-04, shared
2-core development machine, ``bench_step_overhead.py --steps 300 --repeat 5``, relu+tanh):
0.87–0.95 ms CPU per LM iteration at d = n = 10, p = 100 against 1.10–1.14 ms without these
numpy paths, 524 Python calls per iteration against 834 (``--calls``).

*The small-problem path.* For a numpy θ and V of at most ``SMALL_WEIGHTS`` = 2²⁰ entries
(p·d ≤ 2²⁰, one chunk) the problem holds V and Vᵀ as host arrays and evaluates the loss, its
gradient and the dense Gauss–Newton matrix with one BLAS call per product over p: Z = X̂Vᵀ,
G = Φ̂Φ̂ᵀ factored once per point (the factor solves for A and gives NᵀG⁻¹N = BᵀB, B = L⁻¹N),
and E built already projected, E_p = EP, in the layout ((i, l), v), so that
P(M − NᵀG⁺N)P = E_pᵀE_p − BᵀB costs two symmetric products and no (n̂d)² projection. The
same quantities as the streamed path, to rounding (≲ 8p·eps of the largest entry:
``tests/test_varpro.py``), not to the bit: the two paths give different last bits and hence,
through the attack's chaotic search, different runs of equal statistics. Measured (2026-12-05,
this project's 2-core VM, ``python benchmarks/bench_step_overhead.py --path both --calls``,
relu+tanh, p = dn): 0.39 ms per LM iteration at (d, n) = (12, 3), 0.76 ms at (12, 12) and
0.52 ms at (10, 10), against 0.62, 1.10 and 0.84 ms on the streamed path; 229–248 Python calls
per iteration against 510–551. At (12, 12) what is left is mostly arithmetic: the (n̂d)²
product E_pᵀE_p (~100 µs), the LM step's Cholesky of order n̂d (~100 µs a trial), tanh.
Larger problems, and other namespaces (CuPy), take the streamed path.

*Accuracy.* The loss and gradient come from :func:`rftheory.projection.projection_loss`
(residual accumulated directly, relative accuracy kept at small losses). JᵀJ is formed in
float64 through the Gram matrix, so its small eigenvalues carry absolute errors of order
eps·‖JᵀJ‖: the Gauss–Newton steps are accurate while the loss is above ~1e-20, far below any
useful ``tol``.
"""

from __future__ import annotations

import math
import weakref
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import scipy.linalg
import scipy.linalg.lapack
from array_api_compat import is_numpy_namespace

from .blocksum import SUM_GROUP
from .features import BLOCK_ROWS, BlockSum, FeatureChunk, FeatureMap, check_data
from .gram import GramSolution, solve_gram, solve_gram_checked as _solve_gram
from .backend import namespace_of, to_host
from .data import tangent_basis, to_sphere
from .deadline import NO_DEADLINE, TIME_LIMIT_REACHED, Deadline
from .errors import RFTheoryError
from .projection import (ProjectionLoss, keep_budget as _keep_budget, projection_loss,
                         projection_loss_checked as _projection_loss)
from .spectral_init import residual_directions

__all__ = ["HOP_ANGLE", "HOP_DIMENSION", "HOP_ANGLE_MAX", "hop_angle_for", "STALL_WINDOW",
           "STALL_FACTOR", "SOLVERS", "WORK_BUDGET", "SWEEP_FLOOR", "BUILD_DIMENSION", "Problem",
           "Run", "Stop", "levenberg_marquardt", "minimise", "build", "wide_rows", "wide_start",
           "WIDE_EXTRA", "WIDE_RATIO", "WIDE_MERGE_COS", "loss_passes", "default_max_sweeps",
           "STEP_BUDGET", "STEP_DIMENSION", "STEPS_PER_ROUND_CAP", "default_max_steps",
           "default_max_rounds",
           "memory", "LINEARISED_RATIO", "INSIDE_SPAN", "linearised_applies", "linearised_gain",
           "linearised_residual", "fixed_rows_gain", "fixed_rows_residual"]

#: Scale σ of the basin-hopping perturbation x̂ ← √d(x̂ + σ‖x̂‖g/√d)/‖·‖, g ~ N(0, I_d), at
#: d ≤ HOP_DIMENSION: it turns x̂ by atan(σ) ≈ 0.29 rad. Above that dimension the scale grows as
#: √(d/HOP_DIMENSION), up to HOP_ANGLE_MAX (:func:`hop_angle_for`).
HOP_ANGLE = 0.3
HOP_DIMENSION = 10
#: The largest perturbation scale (a turn of atan(0.6) ≈ 0.54 rad, reached at d = 40): closer
#: to the counting limit larger hops hurt (:func:`hop_angle_for`).
HOP_ANGLE_MAX = 0.6
#: A run of LM ends when its loss fell by less than this factor over the last STALL_WINDOW
#: iterations (measured on 300 hops at d = n = 10, p = 1.25dn: window 5–8 with factor 0.9 lost no
#: success and saved 30–40 % of the iterations of a 20-iteration window).
STALL_WINDOW = 6
STALL_FACTOR = 0.9
#: Rounds 2, 2 + EXCHANGE_EVERY, ... start from an exchange (:func:`exchange`, alternately
#: growing and replacing) instead of a perturbation: one row is replaced by the best of
#: EXCHANGE_SCREEN random points fitted to the residual (its EXCHANGE_TOP best refined alone).
EXCHANGE_EVERY = 5
EXCHANGE_SCREEN = 1000
EXCHANGE_TOP = 3
#: Pool points screened together by :func:`_screen` (with the candidates, one pass over V).
SCREEN_BATCH = 256
#: Exchanges screen against the residual with the kept rows *linearised*
#: (:func:`linearised_gain`) below this many times the count of the kept rows' unknowns
#: (p < LINEARISED_RATIO·q·d; :func:`linearised_applies`): the rows found by a search near the
#: counting limit are bent to make up for the points they miss, and only what no first-order
#: motion of them explains points at a missing point. Measured (paper_notes/attack.md, "the
#: linearised exchange"): at (10, 10), 1.1·dn, 31/83 recovered within the default budget
#: against 17/83.
LINEARISED_RATIO = 2.0
#: A pool point whose features keep less than this fraction of their squared norm outside the
#: linearised span is inside it to rounding (:func:`linearised_gain`).
INSIDE_SPAN = 1e-20
#: From this dimension on, every walk after the first starts from :func:`build` (a greedy,
#: moment-guided construction) instead of random points. The best of N random points has
#: cosine about √(2 ln N/d) with a given direction: ≥ 0.83 up to d = 20 for N = EXCHANGE_SCREEN,
#: 0.59 at d = 40, 0.42 at d = 80, so below ~d = 32 a random screen already finds what the
#: residual's moments would. Measured (paper_notes/attack.md, "the build"): at d = 10 and
#: d = 20 building every walk changed nothing or lost ((10, 10), 1.1·dn: 1/12 against 3/12;
#: (20, 10), 1.25·dn: 6/6 both), at d = 40 and 80 it won.
BUILD_DIMENSION = 32
#: Eigenvectors of the residual's second moment offered by :func:`build` at each row (with ±,
#: and ±the first moment: 2 + 2·BUILD_DIRECTIONS candidates), and random points screened
#: with them.
BUILD_DIRECTIONS = 3
BUILD_SCREEN = 200
#: A basin-hopping walk ends after ``patience`` rounds without lowering its best loss by more
#: than this factor (tiny improvements at the bottom of one funnel do not count).
IMPROVEMENT = 0.9
#: A walk also ends after RETURNS rounds in a row whose LM run came back to the walk's best
#: loss to within a relative RETURN_TOL (a funnel bottom that the hops cannot leave; measured:
#: relu, d = 100, n = 20, p = 10dn, seed 1: 30 rounds of hops ended at 5.93e-4 before the
#: restart that found the training set).
RETURNS = 4
RETURN_TOL = 1e-2
#: Where the features far outnumber the unknowns, the first walk starts *wide*: from
#: m + ⌈WIDE_EXTRA·m⌉ random rows, refined together by one LM run and pruned back to m by exact
#: leave-one-out (:func:`wide_start`), when p ≥ WIDE_RATIO·(m + ⌈WIDE_EXTRA·m⌉)·d (with
#: m = n, p ≥ 6·dn). See :func:`wide_rows` for the measurements.
WIDE_EXTRA = 0.5
WIDE_RATIO = 4
#: Rows of a wide set closer than this cosine are one point to the pruning (:func:`_prune_one`).
WIDE_MERGE_COS = 0.99
#: Linear solvers of the LM step.
SOLVERS = ("auto", "dense", "cg")
#: "auto" uses the dense Gauss–Newton matrix when n̂d ≤ this or max(p, n̂d)·(n̂d)² ≤ DENSE_FLOPS
#: (assembling it costs p(n̂d)², factorising it (n̂d)³/3: with few features and many unknowns,
#: e.g. d = 3072 images at p = 6, the factorisation alone took seconds per step).
DENSE_MAX_UNKNOWNS = 256
DENSE_FLOPS = 2**28
#: Working dtype of the matrix-free products (see Problem._product).
PRODUCT_DTYPE = "float32"
#: Relative residual at which CG stops (an inexact Newton step).
CG_RTOL = 1e-2
#: Default work budget of a reconstruction, in multiply-adds of V with the candidates: a run
#: stops ("budget") after ⌈WORK_BUDGET/(p·d·n̂)⌉ sweeps (:func:`default_max_sweeps`), or at
#: ``max_steps`` iterations if that comes first. 2⁴³ ≈ 8.8e12 never binds below d = 3072 at the
#: sizes the package runs (p·d·n̂ ≤ 4e7 at (d, n) = (100, 20), p = 10·dn: 219 903 sweeps, against
#: ~13 000 in any run measured there: ≤ 310 iterations of ~2n̂ + 2 sweeps), and bounds the
#: step-budgeted runs that took hours at CIFAR's dimension: at d = 3072, n = 10, p = dn it is
#: 9 321 sweeps, ~500 LM iterations, ~21 min on 2 cores (paper_notes/attack.md, issue #26). A count, not a clock: the same on every machine.
WORK_BUDGET = 2**43
#: Fewest sweeps the default budget allows, whatever the size (~100 LM iterations), so that the
#: largest problems (d = 3072, n = 100 on a GPU) are not stopped before their first descent.
SWEEP_FLOOR = 2000
#: Default budget of LM iterations up to d = STEP_DIMENSION; above it the budget grows in
#: proportion to d (:func:`default_max_steps`).
STEP_BUDGET = 20_000
#: The dimension from which the default step budget grows with d.
STEP_DIMENSION = 40
#: Iterations of the budget per LM run that the default round cap allows: a run makes at most
#: max(1000, max_steps // STEPS_PER_ROUND_CAP) LM runs (:func:`default_max_rounds`; measured
#: 23 iterations per LM run at (10, 10), 1.1·dn, and 33 at (80, 8), 1.25·dn, so the cap binds
#: only where LM runs end unusually soon).
STEPS_PER_ROUND_CAP = 20
#: Entries of V (p·d) up to which a host (numpy) problem is evaluated and linearised by the
#: *small-problem path* (:meth:`Problem.evaluate`, :meth:`Problem.linearise`): V held as one
#: (p, d) float64 array (at most 8 MiB), each reduction over p one BLAS call, the Gram matrix
#: factored once per point. Above it, or in another namespace: the streamed path. Both compute
#: the same quantities; they agree to rounding (tests/test_varpro.py), not to the bit.
SMALL_WEIGHTS = 2**20


def _small_problem(p: int, d: int) -> bool:
    """Whether a host problem with V of shape (p, d) takes the small-problem path (V of at most
    SMALL_WEIGHTS entries, in one chunk of the stream)."""
    return p * d <= SMALL_WEIGHTS and p <= SUM_GROUP * BLOCK_ROWS
#: Largest damping (relative to the block scales) before a run of LM gives up.
_LAMBDA_MAX = 1e12


def loss_passes(features: FeatureMap, xp: Any, dev: Any, m: int) -> int:
    """Passes over V that one :func:`projection_loss` call makes for m candidates (float64).

    One when its first pass can keep φ, φ′ (and V, unless V is held anyway) for the second,
    two otherwise — the rule of :func:`projection_loss` itself.

    Parameters
    ----------
    features : FeatureMap
        The feature map whose weights V are streamed.
    xp : module
        Array namespace the passes run in.
    dev : object
        Device of ``xp`` the passes run on.
    m : int
        Number of candidates.

    Returns
    -------
    int
        1 or 2.
    """
    kept = 2 * m * features.p * 8
    if not features.weights_resident(xp, xp.float64, dev):
        kept += features.p * features.d * 8
    return 1 if kept <= _keep_budget(xp) else 2


def _float(x: Any) -> float:
    return float(to_host(x)) if not isinstance(x, (float, int)) else float(x)


def hop_angle_for(d: int) -> float:
    """The basin-hopping perturbation's scale at dimension d (the default of ``reconstruct``).

    σ(d) = HOP_ANGLE·√(d/HOP_DIMENSION), at least HOP_ANGLE and at most HOP_ANGLE_MAX: 0.3 up to
    d = 10, 0.42 at 20, 0.6 from d = 40.

    Parameters
    ----------
    d : int
        The dimension of the data (≥ 1).

    Returns
    -------
    float
        σ(d).

    Notes
    -----
    The hop perturbs every row isotropically in its (d − 1)-dimensional tangent space, so its
    component along any one direction — e.g. one that leads out of a funnel's bottom — is
    ~σ/√d. Keeping that component as it was measured best at d = 10 makes σ grow as √d.
    Measured (relu+tanh, n = 8, seeds 0–5, default budget; ``paper_notes/attack.md``): at
    1.5·dn, the median LM iterations to success at d = 40 were 1158 with σ = 0.3, 370 with 0.6
    and 358 with 0.9; at d = 80, 1050 with 0.6 and 346 with 0.9 (6842 with 0.3 on the code of
    2026-12-03, 2 of 6 seeds failing). Nearer the limit the larger hops lose: at (40, 8),
    1.25·dn, 6/6 with 0.6 against 4/6 with 0.9; at (80, 8), 1.25·dn, 0 of seeds 0–2 with 0.85,
    against 5 of seeds 0–5 with 0.6; at (10, 10), 1.1·dn, none of seeds 0–5 with 0.9,
    two with 0.3. Hence the floor at small d and the cap at 0.6, which trades speed far from the
    limit (d = 80, 1.5·dn) for success near it.

    Examples
    --------
    >>> [round(hop_angle_for(d), 2) for d in (3, 10, 20, 40, 80, 3072)]
    [0.3, 0.3, 0.42, 0.6, 0.6, 0.6]
    """
    if isinstance(d, bool) or not isinstance(d, (int, np.integer)) or d < 1:
        raise RFTheoryError(f"d must be a positive integer, got {d!r}")
    return float(min(HOP_ANGLE_MAX, HOP_ANGLE * max(1.0, math.sqrt(d / HOP_DIMENSION))))


def retract(X: np.ndarray, step: np.ndarray) -> np.ndarray:
    """x̂ ← √d (x̂ + δ)/‖x̂ + δ‖ for every row (host float64).

    Parameters
    ----------
    X : ndarray, shape (m, d)
        Points x̂ on the √d-sphere.
    step : ndarray, shape (m, d)
        Steps δ.

    Returns
    -------
    ndarray, shape (m, d)
        The moved points, back on the √d-sphere.
    """
    return to_sphere(X + step)


def _units(X: np.ndarray) -> np.ndarray:
    """The rows of X scaled to unit norm."""
    return X / np.linalg.norm(X, axis=1, keepdims=True)


def _tangent(X: np.ndarray, W: np.ndarray, U: np.ndarray | None = None) -> np.ndarray:
    """Project each row of W (m, d) on the tangent space of the sphere at the row of X
    (``U``: ``_units(X)``, when already computed)."""
    U = _units(X) if U is None else U
    return W - (W * U).sum(axis=1, keepdims=True) * U  # np.sum's reduction, called as a method


@dataclass
class Linearisation:
    """The Gauss–Newton model of L at X̂ (all host float64, in units of the loss).

    L(retract(X̂, δ)) ≈ loss + 2 gᵀδ + δᵀHδ; ``hessian`` is H (dense solver) or None, in which
    case ``product`` computes Hw.

    Parameters
    ----------
    X : ndarray, shape (m, d)
        The rows X̂ of the model (only the free rows when some are held fixed).
    loss : float
        L(X̂).
    gradient : ndarray, shape (m, d)
        g, the gradient of the model, in the tangent spaces.
    scale : ndarray, shape (m,)
        Block scales s_i of the damping S = diag(s_i I_d).
    kron : ndarray, shape (m, m)
        Kronecker preconditioner C.
    hessian : ndarray, shape (m*d, m*d), optional
        H (dense solver); None for the matrix-free solver.
    product : callable, optional
        w ↦ Hw for ``w`` of shape (m, d) (matrix-free solver); None for the dense solver.
    units : ndarray, shape (m, d), optional
        The rows of X at unit norm (``_units(X)``), computed once for every step's projection.
    """

    X: np.ndarray
    loss: float
    gradient: np.ndarray           # (m, d), tangent
    scale: np.ndarray              # (m,) block scales s_i (damping S = diag(s_i I_d))
    kron: np.ndarray               # (m, m) Kronecker preconditioner C
    hessian: np.ndarray | None = None
    product: Callable[[np.ndarray], np.ndarray] | None = None
    units: np.ndarray | None = None


class Problem:
    """θ ≈ Φ(X̂)ᵀA with A eliminated, on a feature map; counts evaluations and passes over V.

    Parameters
    ----------
    features : FeatureMap
        The feature map Φ (weights V and activation).
    theta : array, shape (p, k)
        In the namespace and on the device where the passes over V run (float64).
    xp : module
        Array namespace of ``theta``.
    dev : object
        Device of ``theta``.
    solver : {"auto", "dense", "cg"}, default "auto"
        Linear solver of the LM step (see SOLVERS): "auto" picks "dense" for small n̂d.

    Attributes
    ----------
    small : bool
        Whether evaluations (and dense linearisations) take the small-problem path (module
        Notes; decided by size and namespace alone). Setting it False forces the streamed path
        (the tests compare the two).
    """

    def __init__(self, features: FeatureMap, theta: Any, xp: Any, dev: Any, solver: str = "auto"):
        self.features, self.theta, self.xp, self.dev = features, theta, xp, dev
        self.p, self.d, self.k = features.p, features.d, int(theta.shape[1])
        self.theta_sq = _float(xp.sum(theta * theta))
        self.solver = solver
        # The last evaluation's kept blocks (V, φ, φ′ at its X̂) and Gram matrix, for the
        # linearisation at the same point: (X, result, (chunks, Gram)) or None. Dropped before the next evaluation, so no
        # more blocks are held at once than without it.
        self._last: tuple[np.ndarray, Any, tuple[list, Any]] | None = None
        # V in PRODUCT_DTYPE, per chunk (first block → stacked blocks), made at the first
        # matrix-free linearisation and reused by every later one: V does not change during a
        # run, so its low-precision copy is converted once, not at every LM iteration (at
        # d = 3072, p = 307 200 that conversion read 7.5 GB per iteration).
        self._low_v: dict[int, Any] = {}
        # Row norms Σ_l V_vl² per chunk of V (see _row_norms).
        self._vsq: dict[int, tuple[Any, Any]] = {}
        self._host_xp = namespace_of(np.zeros(0))  # the namespace of numpy arrays
        # The small-problem path: numpy θ, V of at most SMALL_WEIGHTS entries (one chunk).
        self.small = type(theta) is np.ndarray and _small_problem(self.p, self.d)
        # (V, Vᵀ contiguous, row norms ‖v‖²), made at the first small-path evaluation.
        self._small_v: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
        self.evaluations = 0   # loss (and gradient) evaluations
        self.passes = 0        # streams over V (each pass, or each matrix-free product, is one)
        self.products = 0      # matrix-free JᵀJ products (included in passes)
        # Sweeps: products of V with the candidates as the algorithm asks for them (a loss
        # evaluation, a curvature pass, a matrix-free product, a screen batch: one each). Unlike
        # passes (a loss evaluation streams V once or twice, by the memory at hand) they do not
        # depend on the machine, so the work budget counts them.
        self.sweeps = 0

    # -- counting -------------------------------------------------------------------------------
    def _loss_passes(self, m: int) -> int:
        return loss_passes(self.features, self.xp, self.dev, m)

    def _count(self, passes: int, sweeps: int = 1) -> None:
        """Count work over V: ``passes`` streams of it for ``sweeps`` products as asked for."""
        self.passes += passes
        self.sweeps += sweeps

    def dense_for(self, m: int) -> bool:
        """Whether the LM system for m candidates is solved with the dense Gauss–Newton matrix."""
        if self.solver != "auto":
            return self.solver == "dense"
        md = m * self.d
        return md <= DENSE_MAX_UNKNOWNS or max(self.p, md) * md * md <= DENSE_FLOPS

    # -- evaluations ----------------------------------------------------------------------------
    def _device(self, X: np.ndarray) -> Any:
        """Host rows X on the problem's device (checked finite: the loss's own check)."""
        if not np.isfinite(X).all():
            check_data(X, self.d, "X_hat")  # raises the error projection_loss would
        if type(X) is np.ndarray and self.xp is self._host_xp:
            return X  # what asarray returns for a numpy array in its own namespace
        return self.xp.asarray(X, device=self.dev)

    def loss(self, X: np.ndarray, target: Any = None) -> float:
        """L(X̂) (target θ by default)."""
        self._last = None
        if target is None and self.small:
            res = self._small_evaluate(X, gradient=False)[0]
        elif target is None:
            res, _ = _projection_loss(self.features, self._device(X), self.theta,
                                      self.theta_sq, self.xp, gradient=False)
        else:
            res = projection_loss(self.features, self._device(X), target, gradient=False)
        self.evaluations += 1
        self._count(self._loss_passes(X.shape[0]))
        return res.loss

    def evaluate(self, X: np.ndarray) -> Any:
        """:func:`projection_loss` (with gradient) at host rows X (coefficients (m, k)).

        The same numbers as ``projection_loss(features, X, θ)``, without its per-call checks of
        θ (made once, by the problem).
        """
        self._last = None
        if self.small:
            res, kept = self._small_evaluate(X, gradient=True)
        else:
            res, kept = _projection_loss(self.features, self._device(X), self.theta,
                                         self.theta_sq, self.xp, gradient=True,
                                         keep_chunks=True)
        if kept is not None:
            self._last = (X, res, kept)
        self.evaluations += 1
        self._count(self._loss_passes(X.shape[0]))
        return res

    def linearise(self, X: np.ndarray, res: Any = None,
                  free: np.ndarray | None = None) -> Linearisation:
        """Loss, gradient and Gauss–Newton curvature at X̂ (host rows, on the sphere).

        ``res``: the :func:`projection_loss` result at X with its gradient, if already computed.
        ``free``: the rows that may move (default all); the model is then that of those rows,
        the others held fixed (and its curvature costs p·(|free|·d)² rather than p·(n̂d)²).
        """
        xp, dev = self.xp, self.dev
        m, d = X.shape[0], self.d
        rows = np.arange(m) if free is None else np.asarray(free)
        f = rows.size
        if res is None:
            res = self.evaluate(X)
        last, self._last = self._last, None
        if self.small:
            kept = last[2] if last is not None and last[0] is X and last[1] is res else None
            if self.dense_for(f):
                return self._small_linearise(X, res, rows, kept)
            last = None  # the streamed pass below (matrix-free solver) makes its own blocks
        if last is not None and last[0] is X and last[1] is res:
            # The evaluation at X kept V, φ, φ′ and its Gram matrix: the curvature pass reuses
            # them (the same arrays it would compute) instead of streaming X̂Vᵀ and φ again.
            stream, gram = last[2]
        else:
            stream = self.features.unchecked_chunks(xp.asarray(X, device=dev), xp,
                                                    derivative=True)
            gram = None
        A = to_host(res.coefficients, np.float64)
        A = A if A.ndim == 2 else A[:, None]
        all_rows = free is None
        # ∂L/∂X̂ = 2 Jᵀr/‖θ‖² (Euclidean); the model uses g = Jᵀr/‖θ‖² on the tangent space.
        # (All rows: the arrays themselves rather than their copies X[rows], A[rows], ….)
        units = _units(X)
        grad = _tangent(X, 0.5 * to_host(res.gradient, np.float64), units)
        grad = grad if all_rows else grad[rows]
        dense = self.dense_for(f)
        sel = None if all_rows else xp.asarray(rows, device=dev)
        # Curvature pass: Gram, Kronecker traces, and M, N (dense) or the kept blocks (cg).
        f64 = xp.float64
        if is_numpy_namespace(xp):
            # numpy: the wrapped array-API calls of the pass made as the numpy calls they wrap.
            matmul, swap = np.matmul, _swap_numpy

            def zeros(shape: tuple) -> Any:
                return np.zeros(shape, dtype=np.float64)
        else:
            matmul = xp.matmul

            def swap(x: Any) -> Any:
                return xp.permute_dims(x, (0, 2, 1))

            def zeros(shape: tuple) -> Any:
                return xp.zeros(shape, dtype=f64, device=dev)
        G = BlockSum(zeros((m, m))) if gram is None else None
        Ctr = BlockSum(zeros((f, f)))
        if dense:
            M = BlockSum(zeros((f * d, f * d)))
            N = BlockSum(zeros((m, f * d)))
        kept: list[FeatureChunk] = []
        for ch in stream:
            F, D, V = ch.F, ch.D, ch.V                      # (nb,m,r), (nb,m,r), (nb,r,d)
            Df = D if all_rows else xp.take(D, sel, axis=1)  # (nb, f, r)
            if G is not None:
                G.add(ch.first_block, matmul(F, swap(F)))
            vsq = self._row_norms(ch.first_block, V)        # (nb, r)
            Ctr.add(ch.first_block, matmul(Df * vsq[:, None, :], swap(Df)))
            if dense:
                nb, r = V.shape[0], V.shape[1]
                # E[b, v, (i, l)] = D_i(v) V_vl, built in its final layout (no re-layout copy).
                E = swap(Df)[:, :, :, None] * V[:, :, None, :]
                E = xp.reshape(E, (nb, r, f * d))
                M.add(ch.first_block, matmul(swap(E), E))
                N.add(ch.first_block, matmul(F, E))
            else:
                kept.append(FeatureChunk(ch.start, self._low(ch), None, F, D))
        self._count(1)
        Gh = to_host(G.result() if gram is None else gram, np.float64)
        Af = A if all_rows else A[rows]
        W = Af @ Af.T                                        # (f, f): Σ_c a_ic a_jc
        C = W * to_host(Ctr.result(), np.float64) / (d * self.theta_sq)
        scale = np.diag(C).copy()
        floor = max(float(scale.max()) if scale.size else 0.0, 1e-300) * 1e-12
        scale = np.maximum(scale, floor)
        Xf = X if all_rows else X[rows]
        lin = Linearisation(Xf, res.loss, grad, scale, C, units=units if all_rows else units[rows])
        if dense:
            Mh, Nh = to_host(M.result(), np.float64), to_host(N.result(), np.float64)
            # Same G as the evaluation's when it was reused: its Cholesky test is not repeated.
            known = res.gram if gram is not None else None
            K = Mh - Nh.T @ _solve_gram(Gh, Nh, namespace_of(Gh, Nh), known=known).solution
            # P_i K_ij P_j with P_i = I − u_iu_iᵀ.
            U = Xf / math.sqrt(d)
            K = K.reshape(f, d, f, d)
            KU = np.einsum("iajb,jb->iaj", K, U)              # K_ij u_j
            UK = np.einsum("ia,iajb->ijb", U, K)              # u_iᵀ K_ij
            UKU = np.einsum("ijb,jb->ij", UK, U)
            # In place on the fresh K, in the order of K − KU·U − U·UK + U·UKU·U, then
            # H = W ∘ K/‖θ‖² (no temporaries of the size of K beyond the terms).
            K -= KU[:, :, :, None] * U[None, None, :, :]
            K -= U[:, :, None, None] * UK[:, None, :, :]
            K += U[:, :, None, None] * UKU[:, None, :, None] * U[None, None, :, :]
            # K_iajb·W_ij, with W_ij repeated along b (a copy): the same products, in loops of
            # length f·d rather than d.
            K = K.reshape(f, d, f * d)
            K *= np.repeat(W, d, axis=1)[:, None, :]
            K /= self.theta_sq
            H = K.reshape(f * d, f * d)
            lin.hessian = 0.5 * (H + H.T)
        else:
            product = self._product(X, A, Gh, kept)
            if not all_rows:
                full = product

                def product(w: np.ndarray) -> np.ndarray:
                    embedded = np.zeros((m, d))
                    embedded[rows] = w
                    return full(embedded)[rows]
            lin.product = product
        return lin

    # -- the small-problem path (numpy, V of at most SMALL_WEIGHTS entries) -------------------
    def _small_weights(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """V as one host (p, d) float64 array, Vᵀ (contiguous) and V's row norms ‖v‖², made
        at the first use.

        Read from the feature map's own stream (the blocks every other path uses, in order),
        so it is the same V bit for bit.
        """
        if self._small_v is None:
            probe = np.zeros((1, self.d))
            probe[0, 0] = math.sqrt(self.d)
            V = np.concatenate([np.reshape(to_host(ch.V, np.float64), (-1, self.d))
                                for ch in self.features.chunks(probe)])
            self._small_v = (V, np.ascontiguousarray(V.T), (V * V).sum(axis=1))
        return self._small_v

    @staticmethod
    def _small_factor(G: np.ndarray) -> tuple[np.ndarray, float] | None:
        """G's Cholesky factor L (lower) and condition estimate when G passes the streamed
        path's test (a factor, finite, with (max L_ii/min L_ii)²·√eps < 1), else None."""
        if G.size:
            L, info = scipy.linalg.lapack.dpotrf(G, lower=1, clean=0)
            if info == 0:
                diag = np.abs(L.diagonal())
                dmin = float(diag.min())
                if dmin > 0.0 and np.isfinite(diag).all():
                    cond = (float(diag.max()) / dmin) ** 2
                    if cond * math.sqrt(np.finfo(np.float64).eps) < 1.0:
                        return L, cond
        return None

    def _small_gram(self, G: np.ndarray, B: np.ndarray) -> tuple[Any, np.ndarray | None]:
        """G⁺B as :func:`rftheory.gram.solve_gram` decides it, and G's Cholesky factor.

        The solve by the factor of :meth:`_small_factor` (``dpotrs``) rather than a second
        factorisation; anything else goes to :func:`rftheory.gram.solve_gram`'s
        pseudo-inverse path, and the factor is then None.
        """
        factored = self._small_factor(G)
        if factored is not None:
            L, cond = factored
            sol, info = scipy.linalg.lapack.dpotrs(L, B, lower=1)
            if info == 0 and np.isfinite(sol).all():
                return GramSolution(sol, "cholesky", G.shape[0], cond, False), L
        return solve_gram(G, B), None

    def _small_evaluate(self, X: np.ndarray, *, gradient: bool) -> tuple[Any, Any]:
        """:func:`projection_loss` at host rows X on the small-problem path.

        Returns the result (coefficients (m, k)) and, with the gradient, what the
        linearisation at X reuses: (φ, φ′, G, G's factor or None).
        """
        if not np.isfinite(X).all():
            check_data(X, self.d, "X_hat")  # raises the error projection_loss would
        V = self._small_weights()[0]
        theta = self.theta
        act = self.features.activation
        Z = X @ V.T                                            # (m, p)
        if gradient:
            F, D = act.value_and_derivative(Z)
        else:
            F, D = act(Z), None
        G = F @ F.T
        solved, factor = self._small_gram(G, F @ theta)
        A = solved.solution                                    # (m, k)
        R = theta - F.T @ A                                    # (p, k): θ − Φ̂ᵀA
        loss = min(float((R * R).sum()) / self.theta_sq, 1.0)
        grad = None
        if gradient:
            # ∂L/∂X̂ = −2 ((A Rᵀ) ∘ φ′) V/‖θ‖².
            grad = (-2.0 / self.theta_sq) * (((A @ R.T) * D) @ V)
        res = ProjectionLoss(loss, grad, A, solved)
        return res, ((F, D, G, factor) if gradient else None)

    def _small_linearise(self, X: np.ndarray, res: Any, rows: np.ndarray,
                         kept: tuple | None) -> Linearisation:
        """:meth:`linearise` with the dense solver on the small-problem path.

        The same model as the streamed pass (module Notes, *Jacobian*), with P applied to E
        before the products rather than to their result: E_p = EP has the entries
        φ′_i(v)(V_vl − (V_v·u_i)u_il), and P(M − NᵀG⁺N)P = E_pᵀE_p − (Φ̂E_p)ᵀG⁺(Φ̂E_p), which
        saves the (n̂d)² projections of M and N; G⁺ is applied by G's factor from the
        evaluation.
        """
        V, Vt, vsq = self._small_weights()
        m, d, f = X.shape[0], self.d, rows.size
        all_rows = f == m and bool((rows == np.arange(m)).all())
        if kept is None:
            Z = X @ V.T
            F, D = self.features.activation.value_and_derivative(Z)
            G = F @ F.T
            factored = self._small_factor(G)
            factor = None if factored is None else factored[0]
        else:
            F, D, G, factor = kept
        self._count(1)  # the curvature pass
        A = to_host(res.coefficients, np.float64)
        A = A if A.ndim == 2 else A[:, None]
        units = _units(X)
        grad = _tangent(X, 0.5 * to_host(res.gradient, np.float64), units)
        if not all_rows:
            grad, D, A_f, U = grad[rows], D[rows], A[rows], units[rows]
        else:
            A_f, U = A, units
        W = A_f @ A_f.T                                        # (f, f): Σ_c a_ic a_jc
        C = W * ((D * vsq) @ D.T) / (d * self.theta_sq)
        scale = np.diag(C).copy()
        floor = max(float(scale.max()) if scale.size else 0.0, 1e-300) * 1e-12
        scale = np.maximum(scale, floor)
        Xf = X if all_rows else X[rows]
        # Eᵀ in the layout ((i, l), v): rows of length p, the long axis innermost.
        Et = Vt[None, :, :] - U[:, :, None] * (U @ Vt)[:, None, :]   # (f, d, p): P_i v
        Et *= D[:, None, :]
        Et = Et.reshape(f * d, self.p)
        N = F @ Et.T                                           # (m, f·d)
        K = Et @ Et.T                                          # E_pᵀE_p (exactly symmetric)
        if factor is not None:
            # NᵀG⁻¹N = BᵀB with B = L⁻¹N (G = LLᵀ): exactly symmetric too, so H is.
            B = scipy.linalg.lapack.dtrtrs(factor, N, lower=1)[0]
            K -= B.T @ B
        else:
            K -= N.T @ solve_gram(G, N).solution
            K = 0.5 * (K + K.T)
        # H = (W ⊗ 1_{d×d}) ∘ K/‖θ‖², W symmetrised so that H stays symmetric.
        Ws = (W + W.T) / (2.0 * self.theta_sq)
        K = K.reshape(f, d, f, d)
        K *= Ws[:, None, :, None]
        H = K.reshape(f * d, f * d)
        lin = Linearisation(Xf, res.loss, grad, scale, C, units=U)
        lin.hessian = H
        return lin

    def _row_norms(self, first_block: int, V: Any) -> Any:
        """Σ_l V_vl² per row of a chunk's V, (nb, r): computed once per chunk of a cached V.

        V is the same array at every pass when it is cached (the chunk's object is reused), so
        its row norms are kept with a weak reference to it and recomputed for any other array —
        the same numbers either way, and no V is kept alive by the memo.
        """
        memo = self._vsq.get(first_block)
        if memo is not None and memo[0]() is V:
            return memo[1]
        vsq = self.xp.sum(V * V, axis=2)
        try:
            self._vsq[first_block] = (weakref.ref(V), vsq)
        except TypeError:  # an array type without weak references: no memo
            pass
        return vsq

    def _low(self, ch: FeatureChunk) -> Any:
        """The chunk's V in PRODUCT_DTYPE, converted at its first use and kept for the run."""
        V = self._low_v.get(ch.first_block)
        if V is None or V.shape != ch.V.shape:
            V = self.xp.astype(ch.V, getattr(self.xp, PRODUCT_DTYPE))
            self._low_v[ch.first_block] = V
        return V

    def _product(self, X: np.ndarray, A: np.ndarray, Gh: np.ndarray,
                 kept: list[FeatureChunk]) -> Callable[[np.ndarray], np.ndarray]:
        """w ↦ JᵀJw/‖θ‖² by two sweeps over the kept blocks (tangent in, tangent out).

        The sweeps run in PRODUCT_DTYPE: they only feed the inexact CG solve of an LM step
        (relative residual CG_RTOL), which float32's 1e-7 relative rounding does not disturb;
        the loss and gradient that decide every step stay float64.
        """
        xp, dev, k = self.xp, self.dev, self.k
        dt = getattr(xp, PRODUCT_DTYPE)
        m, d = X.shape
        Ad = xp.asarray(A, dtype=dt, device=dev)
        At = xp.asarray(A.T, dtype=dt, device=dev)
        blocks = []
        for ch in kept:
            nb, r = ch.V.shape[0], ch.V.shape[1]
            blocks.append((ch.first_block, nb, r, ch.V, xp.astype(ch.F, dt),
                           xp.astype(ch.D, dt)))

        def product(w: np.ndarray) -> np.ndarray:
            self.products += 1
            self._count(1)
            wt = xp.asarray(_tangent(X, w).T, dtype=dt, device=dev)       # (d, m)
            t = BlockSum(xp.zeros((m, k), dtype=dt, device=dev))
            ys = []
            for first, nb, r, V, F, D in blocks:
                S = xp.reshape(xp.matmul(xp.reshape(V, (nb * r, d)), wt), (nb, r, m))
                Y = D * xp.permute_dims(S, (0, 2, 1))                       # (nb, m, r)
                y = xp.matmul(At[None, :, :], Y)                            # (nb, k, r) = (Bw)ᵀ
                ys.append(y)
                t.add(first, xp.matmul(F, xp.permute_dims(y, (0, 2, 1))))
            u = solve_gram(Gh, to_host(t.result(), np.float64)).solution    # (m, k) = G⁺F(Bw)
            ut = xp.asarray(u.T, dtype=dt, device=dev)
            out = BlockSum(xp.zeros((m, d), dtype=dt, device=dev))
            for (first, nb, r, V, F, D), y in zip(blocks, ys):
                z = y - xp.matmul(ut[None, :, :], F)                        # (P⊥Bw)ᵀ
                out.add(first, xp.matmul(xp.matmul(Ad[None, :, :], z) * D, V))
            return _tangent(X, to_host(out.result(), np.float64)) / self.theta_sq

        return product


def _swap_numpy(x: np.ndarray) -> np.ndarray:
    """``permute_dims(x, (0, 2, 1))`` of a numpy array: the view it returns."""
    return x.transpose(0, 2, 1)


def _cho_factor(A: np.ndarray) -> tuple[np.ndarray, bool]:
    """``scipy.linalg.cho_factor(A, lower=True)`` for a host float64 A: the same LAPACK call.

    SciPy's wrappers (batching, ``asarray_chkfinite``, dispatch) cost ~30 µs a call, ten times
    LAPACK's own time on the 100 × 100 systems of an LM step at the demo's sizes. For a finite
    float64 matrix this calls ``dpotrf`` exactly as ``cho_factor`` does (``lower=1``,
    ``overwrite_a=0``, ``clean=0``), so the factor is bit-identical (tests/test_varpro.py checks
    it); anything else goes through SciPy. Raises ``LinAlgError`` when A is not positive
    definite.
    """
    if A.dtype != np.float64 or A.ndim != 2 or A.shape[0] != A.shape[1] or A.size == 0 \
            or not np.isfinite(A).all():
        return scipy.linalg.cho_factor(A, lower=True)
    c, info = scipy.linalg.lapack.dpotrf(A, lower=1, overwrite_a=0, clean=0)
    if info > 0:
        raise np.linalg.LinAlgError(f"{info}-th leading minor of the array is not positive definite")
    if info < 0:
        raise ValueError(f"LAPACK reported an illegal value in {-info}-th argument of POTRF")
    return c, True


def _cho_solve(factor: tuple[np.ndarray, bool], b: np.ndarray) -> np.ndarray:
    """``scipy.linalg.cho_solve(factor, b)`` for a :func:`_cho_factor` factor: the same
    ``dpotrs`` call (``overwrite_b=0``) for a finite float64 b, bit-identical; else SciPy's."""
    c, lower = factor
    if c.dtype != np.float64 or b.dtype != np.float64 or b.ndim not in (1, 2) \
            or b.shape[0] != c.shape[0] or b.size == 0 or not np.isfinite(b).all():
        return scipy.linalg.cho_solve(factor, b)
    x, info = scipy.linalg.lapack.dpotrs(c, b, lower=int(lower), overwrite_b=0)
    if info != 0:
        raise ValueError(f"illegal value in {-info}th argument of internal potrs")
    return x


def _pcg(lin: Linearisation, lam: float, rhs: np.ndarray, max_iter: int,
         rtol: float) -> np.ndarray:
    """Solve (H + λS)δ = rhs by CG preconditioned with (C + λ diag(s)) ⊗ I_d (tangent spaces)."""
    X = lin.X
    pre = lin.kron + lam * np.diag(lin.scale)
    try:
        factor = _cho_factor(pre)

        def precondition(r: np.ndarray) -> np.ndarray:
            return _tangent(X, _cho_solve(factor, r))
    except np.linalg.LinAlgError:
        def precondition(r: np.ndarray) -> np.ndarray:
            return r / (lam * lin.scale)[:, None]

    def apply(w: np.ndarray) -> np.ndarray:
        return lin.product(w) + lam * lin.scale[:, None] * w

    x = np.zeros_like(rhs)
    r = rhs.copy()
    z = precondition(r)
    p = z.copy()
    rz = float(np.sum(r * z))
    norm0 = math.sqrt(float(np.sum(r * r)))
    if norm0 == 0.0:
        return x
    for _ in range(max_iter):
        q = apply(p)
        pq = float(np.sum(p * q))
        if pq <= 0.0:
            break
        alpha = rz / pq
        x += alpha * p
        r -= alpha * q
        if math.sqrt(float(np.sum(r * r))) <= rtol * norm0:
            break
        z = precondition(r)
        rz_new = float(np.sum(r * z))
        p = z + (rz_new / rz) * p
        rz = rz_new
    return x


def _solve_step(lin: Linearisation, lam: float) -> np.ndarray | None:
    """The LM step δ for damping λ (None when the dense factorisation fails)."""
    m, d = lin.X.shape
    if lin.hessian is not None:
        # H + λ diag(s ⊗ 1_d), as H + λ·diag(...) adds it: +0.0 off the diagonal (which turns a
        # -0.0 into +0.0, as ``+ 0.0`` does) and λs_i on it — without the (md)² diagonal matrix.
        Hl = lin.hessian + 0.0
        Hl.flat[::m * d + 1] += lam * np.repeat(lin.scale, d)  # the diagonal (any layout)
        try:
            factor = _cho_factor(Hl)
        except np.linalg.LinAlgError:
            return None
        step = -_cho_solve(factor, lin.gradient.ravel()).reshape(m, d)
    else:
        step = _pcg(lin, lam, -lin.gradient, max_iter=max(20, 2 * m), rtol=CG_RTOL)
    return _tangent(lin.X, step, lin.units)


def _model_decrease(lin: Linearisation, step: np.ndarray) -> float:
    """Predicted decrease of the loss: −2gᵀδ − δᵀHδ."""
    Hs = (lin.hessian @ step.ravel()).reshape(step.shape) if lin.hessian is not None \
        else lin.product(step)
    # np.sum's reductions, called as methods.
    return -2.0 * float((lin.gradient * step).sum()) - float((step * Hs).sum())


class Stop(Exception):
    """Raised inside a search to end it.

    Parameters
    ----------
    reason : str
        Why: the :class:`Outcome`'s ``stop_reason`` ("tolerance", "budget", "callback" or
        "time_limit"); kept as the attribute ``reason``.
    """

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass
class Outcome:
    """What :func:`minimise` returns (host arrays).

    Parameters
    ----------
    X : ndarray, shape (m, d)
        Best candidates found (host rows, on the √d-sphere).
    loss : float
        Their loss.
    stop_reason : str
        "tolerance", "budget", "callback", "stalled" (max_rounds reached) or "time_limit"
        (the deadline passed).
    steps : int
        LM iterations made, pool iterations included.
    rounds : int
        Basin-hopping rounds (LM runs started from a walk's point).
    history : list of float
        Loss after each LM iteration that is not a pool iteration.
    evaluations : int
        Loss evaluations made by the problem.
    passes : int
        Passes over V made by the problem.
    pool_steps : int
        LM iterations on grown candidate sets (exchange).
    sweeps : int
        Sweeps made by the problem (what the work budget counts; see :class:`Problem`).
    """

    X: np.ndarray
    loss: float
    stop_reason: str
    steps: int
    rounds: int
    history: list[float]
    evaluations: int
    passes: int
    pool_steps: int
    sweeps: int = 0


class Run:
    """Bookkeeping of one minimisation: budget, deadline, history, callback, best point.

    Every LM iteration of :func:`levenberg_marquardt` (and of :func:`exchange`,
    :func:`build`, :func:`wide_start`) reports to it through :meth:`iteration`, which raises
    :class:`Stop` when the search must end.

    Parameters
    ----------
    problem : Problem
        The problem searched (its sweep count is part of the budget).
    tol : float
        A loss at or below this ends the search ("tolerance").
    max_steps : int
        Budget of LM iterations, pool iterations included ("budget").
    callback : callable or None
        ``callback(steps, best_loss, best_X)`` every ``callback_every`` iterations; a true
        return ends the search ("callback").
    callback_every : int
        Iterations between callbacks.
    to_user : callable
        Maps the best host rows to what the callback receives.
    max_sweeps : float, default inf
        Budget of sweeps over V ("budget").
    deadline : Deadline, default NO_DEADLINE
        Clock deadline ("time_limit").
    """

    def __init__(self, problem: Problem, tol: float, max_steps: int, callback: Any,
                 callback_every: int, to_user: Callable[[np.ndarray], Any],
                 max_sweeps: float = math.inf, deadline: Deadline = NO_DEADLINE):
        self.problem, self.tol, self.max_steps = problem, tol, max_steps
        self.max_sweeps = max_sweeps
        self.deadline = deadline
        self.callback, self.callback_every, self.to_user = callback, callback_every, to_user
        self.steps = 0
        self.next_callback = callback_every
        self.pool_steps = 0
        self.history: list[float] = []
        self.report_pool = False   # whether pool iterations call the callback (wide start)
        self.best_X: np.ndarray | None = None
        self.best_loss = math.inf

    def offer(self, X: np.ndarray, loss: float) -> None:
        if loss < self.best_loss:
            self.best_X, self.best_loss = X, loss

    def iteration(self, X: np.ndarray, loss: float, pool: bool = False) -> None:
        """Count one LM iteration ending at (X, loss); raise Stop for tol/callback/budget.

        ``pool``: an iteration on a grown candidate set (exchange), which counts against the
        budget but is neither a candidate answer nor part of the history.
        """
        self.steps += 1
        if pool:
            self.pool_steps += 1
            if self.report_pool:
                self._report()
            self.check_deadline()
            if self._spent():
                raise Stop("budget")
            return
        self.history.append(loss)
        self.offer(X, loss)
        self._report()
        if loss <= self.tol:
            raise Stop("tolerance")
        self.check_deadline()
        if self._spent():
            raise Stop("budget")

    def _report(self) -> None:
        """The callback, every callback_every iterations: not in the pool iterations of an
        exchange, but in those of a wide start (minutes at d = 3072, with the start's rows as
        the best so far)."""
        if self.callback is not None and self.steps >= self.next_callback:
            self.next_callback = self.steps + self.callback_every
            if self.callback(self.steps, self.best_loss, self.to_user(self.best_X)):
                raise Stop("callback")

    def check_deadline(self) -> None:
        """Raise Stop("time_limit") once the deadline has passed: after every LM iteration,
        pool iterations included, and between the parts of an exchange (its screen, each
        refinement), so that a run overshoots its deadline by at most one of them."""
        if self.deadline.passed():
            raise Stop(TIME_LIMIT_REACHED)

    def _spent(self) -> bool:
        """Whether the budget is used up: ``max_steps`` iterations or ``max_sweeps`` sweeps."""
        return self.steps >= self.max_steps or self.problem.sweeps >= self.max_sweeps


def levenberg_marquardt(problem: Problem, X: np.ndarray, run: Run,
                        free: np.ndarray | None = None,
                        pool: bool = False) -> tuple[np.ndarray, float]:
    """One run of LM from X until tol, stall or no descent (raises Stop for tol/budget/callback).

    ``free``: indices of the rows allowed to move (default all). ``pool``: X is a grown set
    (see :meth:`Run.iteration`); reaching tol then ends the run normally. Returns the last point
    and its loss.

    Parameters
    ----------
    problem : Problem
        The problem to minimise.
    X : ndarray, shape (m, d)
        Start, on the √d-sphere (host float64).
    run : Run
        Bookkeeping of the minimisation (tolerance, budget, callback, best point).
    free : ndarray of int, optional
        Indices of the rows allowed to move; default all.
    pool : bool, default False
        Whether X is a grown candidate set whose iterations count only against the budget.

    Returns
    -------
    X : ndarray, shape (m, d)
        The last point.
    loss : float
        Its loss.
    """
    res = problem.evaluate(X)
    if not pool:
        run.offer(X, res.loss)
    if res.loss <= run.tol:
        if pool:
            return X, res.loss
        raise Stop("tolerance")
    loss = res.loss
    lam, nu = 1e-3, 2.0
    local = [loss]
    while True:
        model = problem.linearise(X, res, free)
        accepted = False
        while lam < _LAMBDA_MAX:
            sub = _solve_step(model, lam)
            if sub is None:
                lam, nu = lam * nu, 2 * nu
                continue
            if free is None:
                step = sub
            else:
                step = np.zeros_like(X)
                step[free] = sub
            X_new = retract(X, step)
            res_new = problem.evaluate(X_new)
            if res_new.loss < loss:
                pred = _model_decrease(model, sub)
                gain = (loss - res_new.loss) / pred if pred > 0 else 0.0
                lam *= max(1.0 / 3.0, 1.0 - (2.0 * gain - 1.0) ** 3)
                nu = 2.0
                accepted = True
                break
            lam, nu = lam * nu, 2 * nu
        if not accepted:   # no damping gives a decrease: a stationary point
            return X, loss
        X, res, loss = X_new, res_new, res_new.loss
        local.append(loss)
        run.iteration(X, loss, pool)
        if pool and loss <= run.tol:
            return X, loss
        if len(local) > STALL_WINDOW and loss > STALL_FACTOR * local[-1 - STALL_WINDOW]:
            return X, loss


def _screen(problem: Problem, rows: np.ndarray, target: Any, pool: np.ndarray,
            batch: int = SCREEN_BATCH) -> np.ndarray:
    """Gain ⟨φ(c), r⟩²/‖P⊥_rows φ(c)‖² of adding each pool point c to ``rows`` (r ⊥ their span).

    One pass over V per ``batch`` pool points (together with the rows).
    """
    xp, dev = problem.xp, problem.dev
    q, f64 = rows.shape[0], xp.float64
    G = None
    gains = []
    for start in range(0, pool.shape[0], batch):
        part = pool[start:start + batch]
        npart = part.shape[0]
        both = xp.asarray(np.concatenate([rows, part]), device=dev)
        cross = BlockSum(xp.zeros((q, q + npart), dtype=f64, device=dev))
        sq = BlockSum(xp.zeros((npart,), dtype=f64, device=dev))
        corr = BlockSum(xp.zeros((npart, problem.k), dtype=f64, device=dev))
        for ch in problem.features.chunks(both):
            F = ch.F
            cross.add(ch.first_block, xp.matmul(F[:, :q, :], xp.permute_dims(F, (0, 2, 1))))
            sq.add(ch.first_block, xp.sum(F[:, q:, :] * F[:, q:, :], axis=2))
            corr.add(ch.first_block, xp.matmul(F[:, q:, :], ch.stacked(target)))
        problem._count(1)
        cross, sqh, corrh = (to_host(s.result(), np.float64) for s in (cross, sq, corr))
        G, B = cross[:, :q], cross[:, q:]
        explained = np.sum(B * solve_gram(G, B).solution, axis=0) if q else 0.0
        gains.append(np.sum(corrh * corrh, axis=1) / np.maximum(sqh - explained, 1e-300))
    return np.concatenate(gains)


def linearised_applies(problem: Problem, q: int) -> bool:
    """Whether the exchanges screen with :func:`linearised_gain` for q kept rows.

    Where all of these hold: the small-problem path (V on the host); d < BUILD_DIMENSION, where
    a screen of EXCHANGE_SCREEN random points has one near any given point (above it the
    walks are built from the residual's moments and the exchanges run as before); and
    q·d < p < LINEARISED_RATIO·q·d — room left outside the span of the kept rows and their
    motions, and near enough to the counting limit that the rows are bent; and the size at which
    the LM step is dense (q·d ≤ DENSE_MAX_UNKNOWNS or p(q·d)² ≤ DENSE_FLOPS), which bounds the
    screen's QR (2p(q·d)² flops) and its p × q·d basis (fewer than 2(q·d)² floats, the order of
    the dense Gauss–Newton matrix).

    Parameters
    ----------
    problem : Problem
        The problem.
    q : int
        Number of kept rows (m − 1 for a replace move, m for a grow move).

    Returns
    -------
    bool
        Whether the linearised screen is used.
    """
    qd = q * problem.d
    return (problem.small and q >= 1 and problem.d < BUILD_DIMENSION
            and qd < problem.p < LINEARISED_RATIO * qd
            and (qd <= DENSE_MAX_UNKNOWNS or problem.p * qd * qd <= DENSE_FLOPS))


def _linearised(problem: Problem, rows: np.ndarray, caller: str) -> tuple[np.ndarray, np.ndarray]:
    """(r, Q): Q an orthonormal basis (p, q·d) of the span S of the rows' features and tangent
    motions, r = P⊥θ (p, k) off it. One product, counted."""
    if not problem.small:
        raise ValueError(f"{caller} needs the small-problem path (a numpy θ and p·d ≤ "
                         f"{SMALL_WEIGHTS}); this problem streams V")
    V = problem._small_weights()[0]
    act = problem.features.activation
    F, D = act.value_and_derivative(rows @ V.T)                  # (q, p) each
    span = [F.T] + [(D[i][:, None] * V) @ tangent_basis(rows[i]) for i in range(rows.shape[0])]
    Q = np.linalg.qr(np.hstack(span))[0]                         # (p, q·d), orthonormal
    theta = np.asarray(problem.theta, dtype=np.float64)
    r = theta - Q @ (Q.T @ theta)                                # (p, k)
    problem._count(1)
    return r, Q


def linearised_residual(problem: Problem, rows: np.ndarray) -> np.ndarray:
    """r = P⊥θ with P⊥ the projector off the rows' features *and* their first-order motions.

    The residual that :func:`linearised_gain` scores pool points against (see there for S).

    Parameters
    ----------
    problem : Problem
        On the small-problem path (``problem.small``).
    rows : ndarray, shape (q, d)
        The kept rows, with q·d < p.

    Returns
    -------
    ndarray, shape (p, k)
        The residual (host float64).

    Raises
    ------
    ValueError
        If the problem streams V (not ``problem.small``).

    Notes
    -----
    Cost: one product for the rows' features and derivatives and a thin QR of the p × q·d
    matrix of S (2p(q·d)² flops); memory the p × q·d basis.
    """
    return _linearised(problem, rows, "linearised_residual")[0]


def linearised_gain(problem: Problem, rows: np.ndarray, pool: np.ndarray,
                    batch: int = SCREEN_BATCH) -> np.ndarray:
    """Gain of adding each pool point to ``rows`` when the rows themselves may still move.

    Let S be the span of the rows' features φ(Vx̂_i) and of their first-order motions on the
    sphere, diag(φ′(Vx̂_i))V U_i (U_i a basis of x̂_i's tangent space): q·d directions of R^p.
    With P⊥ the projector onto S^⊥ and r = P⊥θ, the gain of a pool point c is
    ⟨P⊥φ(c), r⟩²/‖P⊥φ(c)‖² (summed over θ's columns) — :func:`_screen`'s gain with S in place
    of the span of the features alone. A row bent by 1–6° to make up for a missing training
    point leaves a residual that its own motions explain; what none of them explains is what
    the missing point adds.

    Parameters
    ----------
    problem : Problem
        On the small-problem path (``problem.small``; V held on the host).
    rows : ndarray, shape (q, d)
        The kept rows, with q·d < p.
    pool : ndarray, shape (s, d)
        The s points to score.
    batch : int
        Pool points per product (one sweep each, counted).

    Returns
    -------
    ndarray, shape (s,)
        The gains, each at most ‖r‖².

    Raises
    ------
    ValueError
        If the problem streams V (not ``problem.small``).

    Notes
    -----
    Cost: one product for the rows (features and derivatives, p·q·d), a thin QR of the p × q·d
    matrix of S (2p(qd)² flops), and per pool point its features and their projection
    (2p·q·d flops). Memory: the p × q·d basis and one batch's features. The projection is
    applied to the features themselves (not through ‖φ(c)‖² − ‖Qᵀφ(c)‖²), so each gain obeys
    Cauchy–Schwarz to rounding even for a point almost inside S. A point inside S to rounding
    (‖P⊥φ(c)‖² ≤ INSIDE_SPAN·‖φ(c)‖², ~10¹⁰ times the rounding of the projection; e.g. a kept
    row) gains 0: its projected features are rounding noise, whose direction means nothing.

    Examples
    --------
    >>> from rftheory.data import gaussian_labels, sphere_points
    >>> from rftheory.features import RandomFeatures, train_min_norm
    >>> X = sphere_points(4, 6, seed=0)
    >>> rf = RandomFeatures("relu+tanh", d=6, p=30, seed=0)
    >>> theta = train_min_norm(rf, X, gaussian_labels(4, seed=0)).theta
    >>> problem = Problem(rf, theta[:, None], np, None)
    >>> pool = np.concatenate([X[:1], random_points(np.random.default_rng(0), 50, 6)])
    >>> int(np.argmax(linearised_gain(problem, X[1:], pool)))   # the missing point first
    0
    """
    r, Q = _linearised(problem, rows, "linearised_gain")
    V = problem._small_weights()[0]
    act = problem.features.activation
    gains = []
    for start in range(0, pool.shape[0], batch):
        Fc = np.asarray(act(pool[start:start + batch] @ V.T))   # (N, p)
        norm_sq = np.sum(Fc * Fc, axis=1)
        Fc = Fc - (Fc @ Q) @ Q.T
        corr = Fc @ r
        perp_sq = np.sum(Fc * Fc, axis=1)
        inside = perp_sq <= INSIDE_SPAN * norm_sq                  # rounding, not a direction
        gains.append(np.where(inside, 0.0, np.sum(corr * corr, axis=1)
                              / np.where(inside, 1.0, perp_sq)))
        problem._count(1)
    return np.concatenate(gains)


def _linearised_pick(problem: Problem, rows: np.ndarray, rng: np.random.Generator,
                     n_screen: int) -> np.ndarray:
    """The best of ``n_screen`` random points by :func:`linearised_gain` against ``rows``."""
    pool = random_points(rng, n_screen, rows.shape[1])
    return pool[int(np.argmax(linearised_gain(problem, rows, pool)))]


def fixed_rows_gain(problem: Problem, rows: np.ndarray, pool: np.ndarray) -> np.ndarray:
    """Gain of adding each pool point to ``rows`` held fixed: ⟨φ(c), r⟩²/‖P⊥φ(c)‖², r = P⊥θ,
    P⊥ the projector off the rows' features (the exchanges' screen where
    :func:`linearised_applies` does not hold; :func:`linearised_gain` is its counterpart).

    Parameters
    ----------
    problem : Problem
        The problem (one loss evaluation and one pass per SCREEN_BATCH pool points, counted).
    rows : ndarray, shape (q, d)
        The kept rows (host).
    pool : ndarray, shape (s, d)
        The s points to score.

    Returns
    -------
    ndarray, shape (s,)
        The gains.
    """
    return _screen(problem, rows, _residual(problem, rows), pool)


def fixed_rows_residual(problem: Problem, rows: np.ndarray) -> Any:
    """r = P⊥θ, P⊥ the projector off the rows' features alone (rows held fixed): what
    :func:`fixed_rows_gain` scores pool points against; :func:`linearised_residual` is its
    counterpart with the rows' motions projected out too.

    Parameters
    ----------
    problem : Problem
        The problem (one loss evaluation and one product, counted).
    rows : ndarray, shape (q, d)
        The kept rows (host); θ itself for q = 0.

    Returns
    -------
    array, shape (p, k)
        The residual, in the problem's namespace.
    """
    return _residual(problem, rows)


def least_useful(problem: Problem, X: np.ndarray) -> int:
    """The row whose removal raises ‖P⊥θ‖² least: exact leave-one-out Σ_c a_jc²/(G⁺)_jj.

    Parameters
    ----------
    problem : Problem
        The problem (one pass over V is counted).
    X : ndarray, shape (m, d)
        Candidate rows (host).

    Returns
    -------
    int
        Index of that row in X.
    """
    weight, cost = _leave_one_out(problem, X)
    return int(np.argmin(cost))


def _leave_one_out(problem: Problem, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row: its weight Σ_c a_jc² and the exact rise of ‖P⊥θ‖² without it,
    Σ_c a_jc²/(G⁺)_jj. One pass over V (the Gram matrix and Φ̂θ), counted."""
    G, c = problem.features.gram_and_matvec(problem.xp.asarray(X, device=problem.dev),
                                            problem.theta)
    problem._count(1)
    G, c = to_host(G, np.float64), to_host(c, np.float64)
    Ginv = solve_gram(G, np.eye(X.shape[0])).solution
    A = Ginv @ (c if c.ndim == 2 else c[:, None])
    weight = np.sum(A * A, axis=1)
    return weight, weight / np.maximum(np.diag(Ginv), 1e-300)


def _residual(problem: Problem, rows: np.ndarray) -> Any:
    """r = θ − Φ̂ᵀA = P⊥_{Φ̂}θ for host rows (in the problem's namespace; θ itself for no rows).

    One loss evaluation and one product: counted as such.
    """
    m = rows.shape[0]
    if m == 0:
        return problem.theta
    xp = problem.xp
    rows_d = xp.asarray(rows, device=problem.dev)
    a = _projection_loss(problem.features, rows_d, problem.theta, problem.theta_sq, xp,
                         gradient=False)[0].coefficients
    problem.evaluations += 1
    problem._count(problem._loss_passes(m) + 1, sweeps=2)
    return problem.theta - problem.features.rmatvec(rows_d, a)


def _fit_new_row(problem: Problem, rows: np.ndarray, position: int, rng: np.random.Generator,
                 run: Run, n_screen: int, top: int) -> np.ndarray:
    """rows with one more row inserted at ``position``, fitted to what ``rows`` miss.

    ``n_screen`` random points are scored by the gain of adding them (:func:`_screen`, against
    the residual r = P⊥θ of ``rows``); the ``top`` best are each refined by LM on the new row
    alone (the others held fixed); the best result is returned.
    """
    resid = _residual(problem, rows)
    pool = random_points(rng, n_screen, rows.shape[1])
    return _insert_best(problem, rows, position, resid, pool, run, top)


def _insert_best(problem: Problem, rows: np.ndarray, position: int, resid: Any,
                 pool: np.ndarray, run: Run, top: int) -> np.ndarray:
    """rows with the best of ``pool`` inserted at ``position``: the ``top`` points of highest
    gain against ``resid`` (:func:`_screen`) are each refined by LM on the new row alone (the
    others held fixed), and the refinement of lowest loss is returned."""
    run.check_deadline()
    score = _screen(problem, rows, resid, pool)
    best_X, best_loss = None, math.inf
    new = np.array([position])
    for i in np.argsort(-score)[:top]:
        run.check_deadline()
        trial = np.insert(rows, position, pool[i], axis=0)
        trial, loss = levenberg_marquardt(problem, trial, run, free=new, pool=True)
        if loss < best_loss:
            best_X, best_loss = trial, loss
    return best_X


def exchange(problem: Problem, X: np.ndarray, rng: np.random.Generator, run: Run, *,
             grow: bool, n_screen: int, top: int) -> np.ndarray:
    """A start for the next LM run that replaces one row of X by one fitted to the residual.

    ``grow=False`` (*replace*): drop the least useful row, fit a new one to what the others
    miss (:func:`_fit_new_row`). ``grow=True``: fit an (m+1)-th row to what X misses, refine
    the m + 1 rows together, then drop the least useful one. Near the counting limit on the
    small-problem path (:func:`linearised_applies`) the new row is instead the pool point of
    highest :func:`linearised_gain` — what the kept rows miss even when they may move — taken
    as it is (no refinement alone; the next LM run, on all rows, fits it).

    Why both. Measured at d = 100, n = 20, p = 10dn (seed 0): LM stops at loss 5e-6 with one row
    far from every training point and the others bent to make up for it; refitting that row with
    the others fixed returns it to the same place (3 of 3 random starts), while a 21st row
    fitted to the residual lands on the missing point (cosine 0.98–0.99, 3 of 3) and the joint
    21-row LM reaches the tolerance. At d = n = 10, p = 1.25dn (seed 5) the replace move
    recovered the training set and the grow move did not within the same budget.

    Parameters
    ----------
    problem : Problem
        The problem.
    X : ndarray, shape (m, d)
        Current rows (host, on the √d-sphere).
    rng : numpy.random.Generator
        Stream of the random pool points.
    run : Run
        Bookkeeping of the minimisation; the LM iterations count as pool iterations.
    grow : bool
        True for the grow move, False for the replace move.
    n_screen : int
        Number of random points scored for the new row.
    top : int
        Number of best-scored points refined by LM.

    Returns
    -------
    ndarray, shape (m, d)
        The new start.
    """
    m = X.shape[0]
    problem._last = None  # no blocks of the last LM evaluation held through the screening
    run.check_deadline()
    if not grow:
        j = least_useful(problem, X)
        rows = np.delete(X, j, axis=0)
        if linearised_applies(problem, m - 1):
            run.check_deadline()
            return np.insert(rows, j, _linearised_pick(problem, rows, rng, n_screen), axis=0)
        return _fit_new_row(problem, rows, j, rng, run, n_screen, top)
    if linearised_applies(problem, m):
        grown = np.insert(X, m, _linearised_pick(problem, X, rng, n_screen), axis=0)
    else:
        grown = _fit_new_row(problem, X, m, rng, run, n_screen, top)
    grown, _ = levenberg_marquardt(problem, grown, run, pool=True)
    return np.delete(grown, least_useful(problem, grown), axis=0)


def build(problem: Problem, rng: np.random.Generator, run: Run, m: int) -> np.ndarray:
    """m rows built one at a time, each fitted to what the rows before it leave unexplained.

    Row k: the residual r = P⊥θ of rows 0..k−1 (θ for k = 0) gives candidates from its
    Hermite moments (:func:`rftheory.spectral_init.residual_directions`: ±T_1(r) and ± the top
    BUILD_DIRECTIONS eigenvectors of T_2(r)), screened with BUILD_SCREEN random points by the
    gain of adding them (:func:`_screen`); the EXCHANGE_TOP best are refined by LM on the new
    row alone, the best of them kept, and LM then runs on all k + 1 rows. A greedy, matching-
    pursuit-like construction: with one training point missing and the others right, the
    residual's moments point at it (|cos| ≈ 0.9 at d = 80, 1.25·dn, whatever its weight), where
    the best of 1000 random points reaches about 0.4.

    Parameters
    ----------
    problem : Problem
        The problem.
    rng : numpy.random.Generator
        Stream of the random points and of the moments' subspace iteration.
    run : Run
        Bookkeeping of the minimisation; every LM iteration here is a pool iteration (counted
        against the budget, not offered as an answer).
    m : int
        Number of rows.

    Returns
    -------
    ndarray, shape (m, d)
        The rows (host, on the √d-sphere).

    Notes
    -----
    Cost per row: one loss evaluation for r, about 20 passes over V for its moments (with at
    most 2·BUILD_DIRECTIONS + 8 vectors each), one screen pass per SCREEN_BATCH pool points,
    EXCHANGE_TOP single-row LM runs and one LM run on all rows so far. Measured at (80, 16),
    relu+tanh, 1.25·dn: ~450–480 LM iterations for all 16 rows; ~510 at (100, 20), 10·dn, where
    a random start needs ~60, which is why only the walks after the first are built.
    """
    d = problem.d
    problem._last = None  # no blocks of the last LM evaluation held through the screening
    rows = np.zeros((0, d))
    for k in range(m):
        run.check_deadline()
        r = _residual(problem, rows)
        spectral, passes = residual_directions(problem.features, r,
                                               k=min(BUILD_DIRECTIONS, d), rng=rng)
        problem._count(passes, sweeps=passes)
        pool = np.concatenate([spectral, random_points(rng, BUILD_SCREEN, d)])
        grown = _insert_best(problem, rows, k, r, pool, run, EXCHANGE_TOP)
        rows, _ = levenberg_marquardt(problem, grown, run, pool=True)
    return rows


def wide_rows(m: int, d: int, p: int) -> int:
    """Extra random rows of a wide first walk for m candidates (0: start from the m alone).

    m + ⌈WIDE_EXTRA·m⌉ rows when p ≥ WIDE_RATIO·(m + ⌈WIDE_EXTRA·m⌉)·d, else none.

    Parameters
    ----------
    m, d, p : int
        Candidates, dimension and features.

    Returns
    -------
    int
        The number of extra rows.

    Notes
    -----
    Far above the counting limit the first LM run from m random rows stops, about every other
    seed, with the rows on all but one or two training points: two rows on one point, a row
    on the wrong side of one (ReLU's φ(−z) = φ(z) − z), a point with no row. Each repair is a
    further LM run, and at d = 3072 an LM run costs minutes. With half as many rows again,
    every training point draws a row: any superset of the training set is a zero of the loss,
    and counting allows one while (m + extra)·d ≪ p. Measured (``paper_notes/attack.md``, issue
    #26, "a wide start"; pooled image patches, relu, n = 10, p = 10·dn): one LM run from 20
    random rows put a row within cos 0.99 of all 10 training points on 8 of 8 seeds at
    d = 192, and from 15 rows on 5 of 5 at d = 768; from 10 rows (the default before), one
    LM run left 1–5 training points without a row within cos 0.99 on each of the 4 seeds of
    uniform data at d = 192 that then needed a second round.
    """
    extra = math.ceil(WIDE_EXTRA * m)
    return extra if m > 0 and p >= WIDE_RATIO * (m + extra) * d else 0


def wide_start(problem: Problem, X0: np.ndarray, rng: np.random.Generator, run: Run,
               extra: int) -> np.ndarray:
    """X0's m rows with ``extra`` random rows, refined together by LM and pruned back to m.

    X0 is offered first as the best point so far (one loss evaluation), so that a stop inside
    the wide run returns it and the callback has rows to show. The LM run on the m + extra
    rows is a pool run (its iterations count against the budget and call the callback, but
    offer no answer); the rows are then dropped one at a time, each the least useful by exact
    leave-one-out (:func:`least_useful`, one pass each).

    Parameters
    ----------
    problem : Problem
        The problem.
    X0 : ndarray, shape (m, d)
        The m start rows (host, on the √d-sphere).
    rng : numpy.random.Generator
        Stream of the extra rows.
    run : Run
        Bookkeeping of the minimisation.
    extra : int
        Number of extra rows (:func:`wide_rows`).

    Returns
    -------
    ndarray, shape (m, d)
        The pruned rows: the first walk's start.
    """
    m, d = X0.shape
    run.offer(X0, problem.loss(X0))
    wide = np.concatenate([X0, random_points(rng, extra, d)])
    run.report_pool = True
    try:
        wide, _ = levenberg_marquardt(problem, wide, run, pool=True)
    finally:
        run.report_pool = False
    while wide.shape[0] > m:
        run.check_deadline()
        wide = np.delete(wide, _prune_one(problem, wide), axis=0)
    return wide


def _prune_one(problem: Problem, X: np.ndarray) -> int:
    """The row of an over-complete set to drop: of the closest pair of rows, if their cosine
    exceeds WIDE_MERGE_COS, the one of smaller weight; else the least useful row.

    Why the pair first: at a zero of the wide set, a training point may hold two rows a hair
    apart with weights of one sign (cos 0.9998, a = 2.2e-4 and 3.1e-4 at d = 768, seed 9),
    which together fit the point better than either alone; leave-one-out then rates a lone
    point of small weight as cheaper to drop than either of the pair, and the pruned set has
    lost that point (loss 5.5e-5 there, against a set covering every point after the merge).

    One pass over V (the Gram matrix and Φ̂θ), as :func:`least_useful`.
    """
    weight, cost = _leave_one_out(problem, X)
    U = _units(X)
    C = U @ U.T
    np.fill_diagonal(C, -np.inf)
    i, j = np.unravel_index(int(np.argmax(C)), C.shape)
    if C[i, j] > WIDE_MERGE_COS:
        return int(i if weight[i] < weight[j] else j)
    return int(np.argmin(cost))


def random_points(rng: np.random.Generator, n: int, d: int) -> np.ndarray:
    """n uniform points on the √d-sphere (host float64), drawn from ``rng``.

    The candidates' own stream (not rftheory.data's seeded streams), same projection.

    Parameters
    ----------
    rng : numpy.random.Generator
        Stream to draw from.
    n : int
        Number of points.
    d : int
        Dimension.

    Returns
    -------
    ndarray, shape (n, d)
        The points, each of norm √d.
    """
    return to_sphere(rng.standard_normal((n, d)))


def next_move(walk_rounds: int, since_better: int, m: int) -> str:
    """The start of a walk's next round: ``"hop"``, ``"grow"`` or ``"replace"``.

    Rounds 2, 2 + 2E, ... of a walk grow; rounds 2 + E, 2 + 3E, ... replace (E =
    EXCHANGE_EVERY); every other round hops. One candidate cannot be exchanged.

    Parameters
    ----------
    walk_rounds : int
        Rounds of the walk so far (1 after its first LM run).
    since_better : int
        Rounds in a row that did not improve the walk's best loss (0: the last one did).
    m : int
        Number of candidates.

    Returns
    -------
    str
        The move.
    """
    if m > 1 and walk_rounds % EXCHANGE_EVERY == 1:
        return "grow" if (walk_rounds // EXCHANGE_EVERY) % 2 == 0 else "replace"
    return "hop"


def minimise(problem: Problem, X0: np.ndarray, rng: np.random.Generator, *, tol: float,
             max_steps: int, max_rounds: int, patience: int, hop_angle: float,
             callback: Any = None, callback_every: int = 10,
             to_user: Callable[[np.ndarray], Any] = lambda X: X,
             max_sweeps: float = math.inf, deadline: Deadline = NO_DEADLINE,
             widen: bool = False) -> Outcome:
    """Basin-hopping walks of LM runs until tol, the budget or max_rounds.

    A walk starts with LM from X0 (with ``widen``, from X0 and :func:`wide_rows` extra random
    rows pruned back by :func:`wide_start`, where the size allows; later walks: from random
    points, or from :func:`build` at d ≥ BUILD_DIMENSION). Each further round starts
    LM from the walk's best point, perturbed by about ``hop_angle`` radians per row or changed
    by an exchange (:func:`exchange`), and the result replaces the walk's best point if its loss
    is lower. A walk ends after ``patience`` rounds in a row that did not lower its best loss
    by more than a factor IMPROVEMENT; the next one starts afresh. The best point of all walks
    is returned.

    Parameters
    ----------
    problem : Problem
        The problem to minimise.
    X0 : ndarray, shape (m, d)
        Start of the first walk (host, on the √d-sphere).
    rng : numpy.random.Generator
        Stream of the perturbations, exchanges and fresh starts.
    tol : float
        Loss at which the minimisation stops.
    max_steps : int
        Budget of LM iterations (pool iterations included).
    max_rounds : int
        Largest number of rounds (LM runs), over all walks.
    patience : int
        Rounds in a row without a sufficient improvement after which a walk ends.
    hop_angle : float
        Angle (radians, about) of the perturbation of every row, e.g. HOP_ANGLE.
    callback : callable, optional
        Called as ``callback(steps, best_loss, to_user(best_X))`` every ``callback_every``
        iterations; a true return value stops the minimisation.
    callback_every : int, default 10
        Iterations between calls of ``callback``.
    to_user : callable, optional
        Maps host rows to what ``callback`` receives; default the identity.
    max_sweeps : float, default inf
        Work budget in sweeps (``Problem.sweeps``, checked after every LM iteration, like
        ``max_steps``; see :func:`default_max_sweeps`).
    deadline : rftheory.deadline.Deadline, optional
        A deadline on the clock (default none), checked after every LM iteration (pool
        iterations included) and between the parts of an exchange: once it has passed the
        minimisation stops with reason "time_limit" and returns its best point.
    widen : bool, default False
        Whether the first walk may start wide (:func:`wide_rows`; X0 random rows).

    Returns
    -------
    Outcome
        The best point of all walks, its loss, the stop reason and the counts.
    """
    run = Run(problem, tol, max_steps, callback, callback_every, to_user, max_sweeps,
               deadline)
    stop = None
    rounds = 0
    m, d = X0.shape
    X = X0
    walk_X, walk_loss, walk_rounds, since_better, returns = None, math.inf, 0, 0, 0
    extra = wide_rows(m, d, problem.p) if widen else 0
    try:
        if extra:
            X = wide_start(problem, X0, rng, run, extra)
        while True:
            rounds += 1
            walk_rounds += 1
            X_end, loss_end = levenberg_marquardt(problem, X, run)
            returned = abs(loss_end - walk_loss) <= RETURN_TOL * walk_loss
            returns = returns + 1 if returned else 0
            if loss_end < walk_loss:
                since_better = 0 if loss_end < IMPROVEMENT * walk_loss else since_better + 1
                walk_X, walk_loss = X_end, loss_end
            else:
                since_better += 1
            if rounds >= max_rounds:
                stop = "stalled"
                break
            if since_better >= patience or returns >= RETURNS:   # a fresh walk
                X = build(problem, rng, run, m) if d >= BUILD_DIMENSION else \
                    random_points(rng, m, d)
                walk_X, walk_loss, walk_rounds, since_better, returns = None, math.inf, 0, 0, 0
                continue
            move = next_move(walk_rounds, since_better, m)
            if move == "hop":
                # ‖x̂‖ = √d and ‖σg‖ ≈ σ√d: each candidate turns by about σ radians.
                X = retract(walk_X, hop_angle * rng.standard_normal((m, d)))
            else:
                X = exchange(problem, walk_X, rng, run, grow=move == "grow",
                             n_screen=EXCHANGE_SCREEN, top=EXCHANGE_TOP)
    except Stop as exc:
        stop = exc.reason
    return Outcome(run.best_X, run.best_loss, stop, run.steps, rounds, run.history,
                   problem.evaluations, problem.passes, run.pool_steps, problem.sweeps)


def default_max_sweeps(p: int, d: int, m: int) -> int:
    """The default work budget of a reconstruction, in sweeps: ⌈WORK_BUDGET/(p·d·m)⌉, at least
    SWEEP_FLOOR.

    Parameters
    ----------
    p, d : int
        Features and input dimension (V is p × d).
    m : int
        Candidates (n̂).

    Returns
    -------
    int
        The number of sweeps after which a run stops with reason "budget".

    Notes
    -----
    A sweep multiplies V by the candidates (p·d·m multiply-adds; a curvature pass does a few
    times that), so the budget bounds the arithmetic of a run, not its iterations: it is the
    same on every machine and binds only where ``max_steps`` iterations would cost hours
    (d = 3072). See :data:`WORK_BUDGET` for the sizes it leaves untouched.

    Examples
    --------
    >>> default_max_sweeps(30720, 3072, 10)           # CIFAR's d, n = 10, p = dn
    9321
    >>> default_max_sweeps(20000, 100, 20)            # (100, 20), p = 10·dn: never binds
    219903
    """
    return max(SWEEP_FLOOR, -(-WORK_BUDGET // (int(p) * int(d) * int(m))))


def default_max_steps(d: int) -> int:
    """The default budget of LM iterations at dimension d: STEP_BUDGET up to d = STEP_DIMENSION,
    then in proportion to d (500·d: 40 000 at d = 80).

    Parameters
    ----------
    d : int
        The data's dimension (≥ 1).

    Returns
    -------
    int
        The iterations after which a run stops with reason "budget".

    Notes
    -----
    The iterations a success needs grow with d beyond d = 40: at p = 1.5·dn, n = 8, the median
    of the successes is 103, 188, 240 and 676 iterations at d = 10, 20, 40, 80
    (``bench_attack.py --growth``, ``paper_notes/attack.md``). A budget fixed in iterations
    therefore stops ever more runs that would succeed as d grows, and the threshold it measures
    drifts with d — the budget's, not the attack's (issue #26). Measured at (d, n) = (80, 8), p
    = 1.25·dn (relu+tanh; runs of 60 000 iterations, read within each budget, which only cuts a
    run; ``paper_notes/attack.md``, stop 59): seeds 1800–1847 38/48 recovered within 20 000
    iterations, 42/48 within 40 000 and within 60 000; seeds 700–723 21/24, 23/24 and 23/24.
    With this default, unseen seeds 1900–1947 gave 45/48. A failing run costs ~3.5 ms of CPU per
    iteration there (125–140 s at 40 000). Up to d = 40 the default is what it always was, and
    there more iterations do not pay: at the counting limit the success per iteration is 8–90×
    too small for any affordable budget (stop 47). At CIFAR's dimension the work budget
    (:func:`default_max_sweeps`) binds long before this one. A count, not a clock: the same on
    every machine.

    Examples
    --------
    >>> default_max_steps(10), default_max_steps(40), default_max_steps(80)
    (20000, 20000, 40000)
    """
    d = int(d)
    return max(STEP_BUDGET, -(-STEP_BUDGET * d // STEP_DIMENSION))


def default_max_rounds(max_steps: int) -> int:
    """The default cap on LM runs for a budget of ``max_steps`` iterations: max(1000,
    max_steps // STEPS_PER_ROUND_CAP).

    Parameters
    ----------
    max_steps : int
        The run's iteration budget.

    Returns
    -------
    int
        The rounds after which a run stops with reason "stalled".

    Notes
    -----
    An iteration counts when LM accepts it, so a round cap is what ends a run whose LM runs
    stop accepting steps. Near the counting limit an LM run takes 23 iterations on average at
    (10, 10) and 33 at (80, 8) (STEPS_PER_ROUND_CAP), so a fixed 1 000 rounds cut runs of more
    than ~25 000 iterations; the cap grows with the budget so that it does not cut the larger
    default budgets of :func:`default_max_steps`.

    Examples
    --------
    >>> default_max_rounds(20000), default_max_rounds(40000)
    (1000, 2000)
    """
    return max(1000, int(max_steps) // STEPS_PER_ROUND_CAP)


# -- memory, declared next to the code it describes (summed and checked by rftheory.budget) -----

def memory(m: float, d: float, p: float, k: float = 1, *, resident: bool = False,
           threads: int = 1, solver: str = "auto", exchanges: bool = True,
           wide: bool = True) -> tuple[float, dict]:
    """Peak bytes of :func:`minimise` for m candidates (host float64, θ and V's cache excluded).

    One LM iteration: the curvature pass of :meth:`Problem.linearise` (φ, φ′, G, the Kronecker
    traces) and a trial step's loss evaluation; with the *dense* solver the per-chunk E = φ′ ⊙ V
    and the summed M, N, then H, H + λS and its factor ((md)² each); with *cg* the kept blocks
    (φ, φ′ in float64 from the pass and their float32 copies) alive through every trial, and
    V's float32 copy, held from the first matrix-free step to the end of the run. An exchange
    (``exchanges``, when m > 1): its leave-one-out pass and the screen of random points in
    batches of ``SCREEN_BATCH`` rows with the candidates (with V's float32 copy alive when an
    LM run of m or m + 1 rows is matrix-free). Not counted: V's row norms kept between passes
    (:meth:`Problem._row_norms`, p floats, below every term above).

    Parameters
    ----------
    m, d, p, k : float
        Candidates, input dimension, features, outputs of θ.
    resident : bool
        V is cached.
    threads : int
        Threads drawing V.
    solver : {"auto", "dense", "cg"}
        As in :class:`Problem` (``"auto"``: :meth:`Problem.dense_for`'s rule).
    exchanges : bool
        Whether the run may reach an exchange (more than one LM run).
    wide : bool
        Whether the run may start wide (a random start: :func:`wide_rows` extra rows in its
        first LM run, counted as the LM terms of m + extra candidates where the size allows).

    Returns
    -------
    peak : float
        Bytes.
    parts : dict of str to float
        Its named terms.

    Examples
    --------
    >>> peak, parts = memory(10, 20, 4000)
    >>> "Gauss–Newton matrix" in parts, peak < 2**26
    (True, True)
    """
    from types import SimpleNamespace

    from .features import stream_memory
    from .projection import loss_memory

    if solver not in SOLVERS:
        raise RFTheoryError(f"unknown solver {solver!r}; choose one of {', '.join(SOLVERS)}")
    ns = SimpleNamespace(solver=solver, d=d, p=p)
    dense = Problem.dense_for(ns, m)  # type: ignore[arg-type]
    itemsize = 8
    md = m * d
    rows = min(p, SUM_GROUP * BLOCK_ROWS)
    chunk_blocks = math.ceil(rows / BLOCK_ROWS)
    ev = loss_memory(m, d, p, k, itemsize, resident=resident, threads=threads)
    curv = stream_memory(m, d, p, itemsize, cached=resident, threads=threads, derivative=True,
                         gram=True, kept=not dense)
    parts = {"loss evaluation": ev}
    if dense:
        pass_extra = 2 * rows * md * itemsize + (chunk_blocks + 2) * (md * md + m * md) * itemsize
        host = 6 * md * md * itemsize
        peak = max(curv + pass_extra, host, 3 * md * md * itemsize + ev)
        parts["Gauss–Newton matrix"] = max(host, 3 * md * md * itemsize)
    else:
        # φ, φ′ in float64 from the pass, and their float32 copies; V's float32 copy
        # (Problem._low) is held from the first matrix-free linearisation to the end.
        kept64 = 2 * m * p * itemsize
        kept32 = (p * d + 2 * m * p) * 4
        sweep = (k * p + 4 * rows * m) * 4
        peak = max(curv + kept64 + kept32, kept32 + sweep, kept32 + ev)
        parts["kept blocks (CG)"] = kept64 + kept32
    if _small_problem(p, d):
        # The small-problem path holds V and Vᵀ as host arrays for the whole run (≤ 16 MiB).
        parts["V, Vᵀ (small-problem path)"] = 2 * p * d * itemsize
        peak += 2 * p * d * itemsize
    # An exchange's grown set (m + 1 rows, all free) may be solved matrix-free even when the m
    # rows are not, and then makes V's float32 copy too.
    low = 0.0 if Problem.dense_for(ns, m + 1 if exchanges and m > 1 else m) else p * d * 4
    if exchanges and m > 1:
        loo = stream_memory(m + 1, d, p, itemsize, cached=resident, threads=threads, gram=True,
                            outputs=k)
        batch = SCREEN_BATCH
        one = stream_memory(m + batch, d, p, itemsize, cached=resident, threads=threads,
                            outputs=k)
        ex = max(loo, one + 3 * (m + batch) ** 2 * itemsize,
                 loss_memory(m + 1, d, p, k, itemsize, resident=resident, threads=threads))
        parts["exchange"] = ex + low
        peak = max(peak, ex + low)
    extra = wide_rows(math.ceil(m), math.ceil(d), math.floor(p)) if wide else 0
    if extra:
        start, _ = memory(m + extra, d, p, k, resident=resident, threads=threads, solver=solver,
                          exchanges=False, wide=False)
        parts["wide start"] = start
        peak = max(peak, start)
    return peak, parts
