"""Sphinx extension of rftheory's docs: pages generated from the project's own files and runs.

At ``builder-inited`` (before Sphinx reads any page) it writes, under ``docs/_generated/``:

* ``claims/<note>.md`` — one page per note of ``paper_notes/`` (the note itself is included, never
  copied), followed by the figure and summary of that claim's ``--quick`` run;
* ``gallery/`` — the figures, drawn by the package's own code: each claim's by its ``plot``
  from the kept result of ``rftheory verify CLAIM --quick`` (:data:`CACHE`; with
  ``RFTHEORY_DOCS_LIVE=1`` the claims are run during the build instead), the others by a few
  single commands (:data:`FIGURE_COMMANDS`); ``gallery.md`` shows them all;
* ``cli.md`` — every subcommand's ``--help``.

The figures are drawn once per build and shared by the gallery and the claim pages. A later
build in the same checkout reuses them only while nothing under ``rftheory/`` (nor the commands)
has changed — :func:`_sources_digest` is stored beside them — so a fresh clone, as in CI, always
draws them anew. ``RFTHEORY_DOCS_REDRAW=1`` forces a new run.

At ``build-finished`` it copies MathJax (from the ``django-static-mathjax`` wheel) into the
site's ``_static/mathjax``, so that no page loads anything from the web.
"""

from __future__ import annotations

import hashlib
import importlib
import inspect
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
import time
from importlib.resources import files
from pathlib import Path

from sphinx.errors import ExtensionError
from sphinx.util import logging
from sphinx.util.nodes import make_refnode

LOG = logging.getLogger(__name__)

DOCS = Path(__file__).resolve().parents[1]
ROOT = DOCS.parent
GEN = DOCS / "_generated"
GALLERY = GEN / "gallery"
RFT = [sys.executable, "-m", "rftheory.cli"]

#: Where the gallery's claim results are kept: ``<claim>.json`` of ``rftheory verify <claim>
#: --quick`` and ``MANIFEST.json`` (the command, commit and time of each run), written by
#: ``_precompute/gallery_results.py``. The claims' quick runs took 19 min on the shared two
#: cores, too long for every build; the figures are drawn from these results at build time by the claims' own
#: ``plot`` functions, so a change of a figure's code shows in the next build.
CACHE = DOCS / "_gallery"

#: The single commands that draw the rest of the gallery at build time (seconds each): (what is
#: drawn, the arguments of ``rftheory``). ``{out}`` is the gallery directory.
FIGURE_COMMANDS = [
    ("Hermite spectrum of relu+tanh",
     ["activation", "relu+tanh", "--order", "40", "--plot", "{out}/activation_relu_tanh.png"]),
    ("Hermite spectrum of tanh (odd: the even coefficients vanish)",
     ["activation", "tanh", "--order", "40", "--plot", "{out}/activation_tanh.png"]),
    ("concentration of ReLU's feature Gram",
     ["kernel", "relu", "--d", "10", "--n", "20", "--p", "64,256,1024,4096,16384",
      "--plot", "{out}/kernel_relu.png"]),
    ("one reconstruction",
     ["reconstruct", "--d", "20", "--n", "10", "--p-mult", "10", "--seed", "3",
      "--plot", "{out}/reconstruct.png"]),
    ("the example sweep",
     ["sweep", "run", str(ROOT / "examples" / "law_small.toml"), "--out", "{out}/sweep",
      "--workers", "2", "--no-progress", "--plot", "{out}/sweep_report.png"]),
]

#: Captions of the single-command figures (the claims' captions are their ``plot`` docstrings).
CAPTIONS = {
    "activation_relu_tanh": "``rftheory activation relu+tanh --order 40 --plot …``: the Hermite "
                            "coefficients |μ_k| of relu+tanh on a log axis, with their error "
                            "estimates; coefficients that vanish are marked on the bottom edge.",
    "activation_tanh": "``rftheory activation tanh --order 40 --plot …``: tanh is odd, so every "
                       "even coefficient vanishes (marked on the bottom edge).",
    "kernel_relu": "``rftheory kernel relu --d 10 --n 20 --p 64,…,16384 --plot …``: the "
                   "concentration of ΦΦᵀ/p around the kernel K for one activation.",
    "reconstruct": "``rftheory reconstruct --d 20 --n 10 --p-mult 10 --seed 3 --plot …``: one "
                   "reconstruction of the training set from (θ*, V).",
    "sweep_report": "``rftheory sweep run examples/law_small.toml --plot …``: the example sweep's "
                    "report (36 cells: ReLU and relu+tanh, d = 5, n = 4, 3 seeds).",
}


def _sources_digest() -> str:
    """SHA-256 over the package's sources and this file: what the gallery's figures depend on."""
    h = hashlib.sha256()
    for path in sorted((ROOT / "rftheory").rglob("*")):
        if path.suffix in (".py", ".mplstyle") and "__pycache__" not in path.parts:
            h.update(str(path.relative_to(ROOT)).encode())
            h.update(path.read_bytes())
    extras = [Path(__file__), ROOT / "examples" / "law_small.toml", *sorted(CACHE.glob("*.json"))]
    for extra in extras:
        h.update(extra.read_bytes())
    h.update(os.environ.get("RFTHEORY_DOCS_LIVE", "").encode())
    return h.hexdigest()


def _run(args: list[str], log) -> None:
    cmd = RFT + args
    log.write(f"$ rftheory {' '.join(args)}\n")
    log.flush()
    env = dict(os.environ, MPLBACKEND="Agg")
    proc = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT, env=env)
    if proc.returncode != 0:
        raise ExtensionError(f"gallery command failed (exit {proc.returncode}): rftheory "
                             f"{' '.join(args)}; see {log.name}")


def _draw_claims_from_cache() -> dict[str, float]:
    """Each claim's figure, drawn by its module's ``plot`` from the kept result; seconds each."""
    times = {}
    for claim in _claims():
        path = CACHE / f"{claim}.json"
        if not path.is_file():
            raise ExtensionError(f"{path} is missing: run python docs/_precompute/gallery_results.py")
        start = time.perf_counter()
        result = json.loads(path.read_text())
        importlib.import_module(f"rftheory.claims.{claim}").plot(result, GALLERY / claim)
        shutil.copy2(path, GALLERY / path.name)
        times[f"{claim} (figure from the kept result)"] = round(time.perf_counter() - start, 1)
    return times


def draw_gallery() -> None:
    """Draw every figure into ``_generated/gallery`` (or reuse an up-to-date set).

    The claims' figures are drawn from the kept results of :data:`CACHE`, or, with
    ``RFTHEORY_DOCS_LIVE=1``, by running ``rftheory verify all --quick`` now; then
    :data:`FIGURE_COMMANDS` run.
    """
    stamp = GALLERY / "SOURCES_SHA256"
    digest = _sources_digest()
    if (stamp.is_file() and stamp.read_text().strip() == digest
            and not os.environ.get("RFTHEORY_DOCS_REDRAW")):
        LOG.info("rftheory_docs: gallery figures are up to date with the sources; reusing them")
        return
    if GALLERY.exists():
        shutil.rmtree(GALLERY)
    GALLERY.mkdir(parents=True)
    times = {}
    with open(GALLERY / "commands.log", "w") as log:
        if os.environ.get("RFTHEORY_DOCS_LIVE"):
            LOG.info("rftheory_docs: running the claims at their quick sizes (RFTHEORY_DOCS_LIVE) …")
            start = time.perf_counter()
            _run(["verify", "all", "--quick", "--out", str(GALLERY)], log)
            times["rftheory verify all --quick"] = round(time.perf_counter() - start, 1)
        else:
            LOG.info("rftheory_docs: drawing the claims' figures from docs/_gallery …")
            times.update(_draw_claims_from_cache())
        for what, args in FIGURE_COMMANDS:
            LOG.info(f"rftheory_docs: drawing {what} …")
            start = time.perf_counter()
            _run([a.replace("{out}", str(GALLERY)) for a in args], log)
            times[what] = round(time.perf_counter() - start, 1)
    (GALLERY / "times.json").write_text(json.dumps(times, indent=1) + "\n")
    stamp.write_text(digest + "\n")


def _provenance(claim: str) -> str:
    """Where this build's result of ``claim`` comes from, in one sentence."""
    if os.environ.get("RFTHEORY_DOCS_LIVE"):
        return f"Drawn by `rftheory verify {claim} --quick` while these pages were built"
    manifest = CACHE / "MANIFEST.json"
    runs = json.loads(manifest.read_text())["runs"] if manifest.is_file() else {}
    run = runs.get(claim, {})
    made = f" on {run['date'][:10]}" if run.get("date") else ""
    made += f" at commit `{run['commit']}`" if run.get("commit") else ""
    return (f"Drawn while these pages were built, by `rftheory.claims.{claim}.plot`, from the "
            f"result of `rftheory verify {claim} --quick` kept in `docs/_gallery/`{made}")


def _claims() -> tuple[str, ...]:
    from rftheory.claims import CLAIMS

    return CLAIMS


def _caption(claim: str) -> str:
    """The figure's caption: its ``plot`` docstring up to the Parameters section."""
    module = importlib.import_module(f"rftheory.claims.{claim}")
    text = inspect.cleandoc(module.plot.__doc__ or "")
    return re.split(r"\n\s*Parameters\n\s*-{3,}", text)[0].strip()


def _escape_bars_in(text: str) -> str:
    """Escape ``|`` outside inline code: captions write |x| and ‖x‖ as in print, which reST
    would read as substitutions."""
    return "\n".join("".join(part if k % 2 else part.replace("|", r"\|")
                             for k, part in enumerate(_CODE.split(line)))
                     for line in text.splitlines())


def _figure_block(stem: str, caption: str, *, target: str | None = None) -> str:
    """A MyST ``figure`` of ``_generated/gallery/<stem>.png`` with an rST caption."""
    caption = textwrap.indent(_escape_bars_in(caption.strip()), "   ")
    link = f"   (:doc:`{target}`)\n" if target else ""
    return (f"```{{eval-rst}}\n.. figure:: /_generated/gallery/{stem}.png\n"
            f"   :alt: {stem}\n   :width: 100%\n\n{caption}\n{link}```\n")


def _summary_block(claim: str) -> str:
    path = GALLERY / f"{claim}.json"
    if not path.is_file():
        return ""
    module = importlib.import_module(f"rftheory.claims.{claim}")
    result = json.loads(path.read_text())
    text = module.summary(result)
    wall = result.get("wall_seconds")
    head = (f"The quick run's summary (the run took {wall:.0f} s):\n\n" if wall is not None
            else "")
    return f"{head}```{{code-block}} text\n:class: rft-summary\n{text}\n```\n"


def write_claim_pages() -> None:
    """One page per ``paper_notes/*.md``: the note, then this build's figure and summary."""
    out = GEN / "claims"
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    claims = set(_claims())
    for note in sorted((ROOT / "paper_notes").glob("*.md")):
        name = note.stem
        rel = os.path.relpath(note, out)
        parts = [f"```{{include}} {rel}\n:relative-images:\n```\n"]
        if name in claims and (GALLERY / f"{name}.png").is_file():
            parts += [f"\n## The quick run's figure\n\n"
                      f"{_provenance(name)} (the note above quotes the full run). Module: "
                      f"{{mod}}`rftheory.claims.{name}`.\n\n",
                      _figure_block(name, _caption(name)), "\n", _summary_block(name)]
        (out / f"{name}.md").write_text("".join(parts))


def write_gallery_page() -> None:
    """``_generated/gallery.md``: every figure the commands drew, with its caption."""
    parts = ["# Gallery\n\n",
             "Every figure below was drawn while this site was built by the package's own code: "
             "the claims' figures by each claim's `plot` from the results of "
             "`rftheory verify CLAIM --quick` kept in `docs/_gallery/` (rerun them with "
             "`python docs/_precompute/gallery_results.py`; `RFTHEORY_DOCS_LIVE=1` runs them "
             "during the build instead), the others by the commands shown. The paper notes "
             "quote the full runs. Each claim's figure also appears on its page under "
             "{doc}`/claims`.\n\n",
             "## The claims of the paper\n\n"]
    for claim in _claims():
        if (GALLERY / f"{claim}.png").is_file():
            parts += [f"### `rftheory verify {claim} --quick`\n\n",
                      _figure_block(claim, _caption(claim), target=f"/_generated/claims/{claim}")
                      if (ROOT / "paper_notes" / f"{claim}.md").is_file()
                      else _figure_block(claim, _caption(claim)), "\n"]
    parts.append("## Single commands\n\n")
    for stem, caption in CAPTIONS.items():
        if (GALLERY / f"{stem}.png").is_file():
            parts += [f"### {stem.replace('_', ' ')}\n\n", _figure_block(stem, caption), "\n"]
    times = GALLERY / "times.json"
    if times.is_file():
        rows = json.loads(times.read_text())
        parts.append("Time each command took in this build (seconds): "
                     + "; ".join(f"{k}: {v}" for k, v in rows.items()) + ".\n")
    (GEN / "gallery.md").write_text("".join(parts))


def write_cli_page() -> None:
    """``_generated/cli.md``: ``rftheory --help`` and every subcommand's."""
    from rftheory.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    parts = ["# Command line\n\n",
             "`rftheory` has one subcommand per task; every one has `--help` (shown below, "
             "as printed by this version), `--json` for machine-readable output and, where a "
             "figure makes sense, `--plot FILE`. Bad input prints one line on stderr and exits "
             "with status 2.\n\n",
             f"```text\n{parser.format_help()}```\n\n"]
    for name, subparser in sub.choices.items():
        parts.append(f"## `rftheory {name}`\n\n```text\n{subparser.format_help()}```\n\n")
    (GEN / "cli.md").write_text("".join(parts))


def _generate(app) -> None:
    GEN.mkdir(exist_ok=True)
    if os.environ.get("RFTHEORY_DOCS_NO_GALLERY"):
        LOG.warning("rftheory_docs: RFTHEORY_DOCS_NO_GALLERY is set: no figures drawn")
    else:
        draw_gallery()
    write_claim_pages()
    write_gallery_page()
    write_cli_page()


def _copy_mathjax(app, exception) -> None:
    if exception is not None or app.builder.format != "html":
        return
    es5 = Path(str(files("mathjax").joinpath("static", "mathjax", "es5")))
    dest = Path(app.outdir) / "_static" / "mathjax"
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    shutil.copy2(es5 / "tex-chtml.js", dest / "tex-chtml.js")
    for sub in ("output/chtml/fonts/woff-v2", "input/tex/extensions", "ui", "a11y"):
        shutil.copytree(es5 / sub, dest / sub)


_CODE = re.compile(r"(``.+?``|`[^`]+`)")


def escape_bars(app, what, name, obj, options, lines) -> None:
    """``autodoc-process-docstring``: the docstrings write absolute values and norms as in print,
    ``|t| ≤ 0.9``, ``‖x‖``; reST would read ``|t|`` as a substitution. Escape every ``|`` outside
    inline code, doctest blocks and literal blocks."""
    literal_indent = None
    in_doctest = False
    for i, line in enumerate(lines):
        stripped = line.strip()
        indent = len(line) - len(line.lstrip())
        if literal_indent is not None:
            if stripped and indent <= literal_indent:
                literal_indent = None
            else:
                continue
        if stripped.startswith(">>>"):
            in_doctest = True
        elif not stripped:
            in_doctest = False
        if in_doctest:
            continue
        if "|" in line:
            parts = _CODE.split(line)
            lines[i] = "".join(part if k % 2 else part.replace("|", r"\|")
                               for k, part in enumerate(parts))
        if stripped.endswith("::") and not stripped.startswith(".."):
            literal_indent = indent


def _canonical(name: str) -> bool:
    """Whether ``name`` (``pkg.mod.obj[.attr]``) is where the object is defined, not a re-export."""
    parts = name.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        owner = ".".join(parts[:cut])
        for attr in parts[cut:cut + 1]:
            obj = getattr(obj, attr, None)
        defined = getattr(obj, "__module__", None)
        return defined is None or defined == owner
    return True


def _exists_undocumented(module: str | None, cls: str | None, target: str) -> bool:
    """Whether ``target`` names something in the code (seen from ``module`` and class ``cls``)
    that is simply not part of the documented API: a constant outside ``__all__``, a private
    helper, a method without a docstring, a dataclass field."""
    candidates = [target]
    if module:
        candidates.insert(0, f"{module}.{target}")
        if cls:
            candidates.insert(0, f"{module}.{cls}.{target}")
    for full in candidates:
        parts = full.split(".")
        for cut in range(len(parts), 0, -1):
            try:
                obj = importlib.import_module(".".join(parts[:cut]))
            except ImportError:
                continue
            for attr in parts[cut:]:
                fields = getattr(obj, "__dataclass_fields__", {})
                if hasattr(obj, attr) or attr in fields:
                    obj = getattr(obj, attr, None)
                else:
                    break
            else:
                return True
            break
    return False


def resolve_short_names(app, env, node, contnode):
    """``missing-reference``: resolve an unqualified Python name (``RandomFeatures``,
    ``SweepStore.open_writer``) when one documented object — counting a re-export and its
    definition as one — ends with it. A name that exists in the code but is not documented
    (a private helper, a constant outside ``__all__``) is shown as code without a link; any other
    name stays a broken reference (and fails the build)."""
    if node.get("refdomain") != "py":
        return None
    target = node["reftarget"].lstrip(".~")
    domain = env.get_domain("py")
    matches = domain.find_obj(env, node.get("py:module"), node.get("py:class"), target,
                              node.get("reftype"), 1)
    if len({entry.node_id for _, entry in matches}) > 1:
        matches = [m for m in matches if _canonical(m[0])]
    here = node.get("py:module")
    if len({entry.node_id for _, entry in matches}) > 1 and here:
        # the same name in several modules (each claim's FULL): the one of the docstring's module
        matches = [m for m in matches if m[0].startswith(here + ".")] or matches
    if len({entry.node_id for _, entry in matches}) == 1:
        name, entry = matches[0]
        return make_refnode(app.builder, node["refdoc"], entry.docname, entry.node_id, contnode,
                            name)
    if len({entry.node_id for _, entry in matches}) > 1 and all(
            _canonical(m[0]) for m in matches) and _defined_in_package(target):
        return contnode  # defined in several modules (each claim's FULL): shown as code
    if not matches and (_exists_undocumented(node.get("py:module"), node.get("py:class"), target)
                        or _defined_in_package(target)):
        return contnode
    return None


def _defined_in_package(target: str) -> bool:
    """Whether an unqualified ``target`` is a module-level name of some rftheory module (seen
    from a docstring inherited by, or re-exported into, another module: ``FULL`` of a claim
    named in a ``run`` docstring, a private helper named in a base class's method)."""
    if "." in target:
        return False
    return any(name.startswith("rftheory") and hasattr(module, target)
               for name, module in list(sys.modules.items()) if module is not None)


def setup(app):
    app.connect("autodoc-process-docstring", escape_bars)
    app.connect("missing-reference", resolve_short_names)
    app.connect("builder-inited", _generate)
    app.connect("build-finished", _copy_mathjax)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
