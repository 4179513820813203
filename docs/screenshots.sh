#!/usr/bin/env bash
# Screenshots of the built documentation, to look at it as a reader would (issue #18).
#
#   bash docs/screenshots.sh [SITE] [OUT]
#
# SITE: the built HTML (default docs/_build/html; build it first, see the README), OUT: where the
# PNGs go (default docs/screenshots/, ignored by git). Needs headless Chromium (Debian's
# `chromium` package: apt-get install chromium). Pages: the index, the theory page (maths), an
# API page, the gallery, a claim page and the command line. MathJax renders asynchronously, so
# each page gets a virtual-time budget before the shot.
set -euo pipefail
cd "$(dirname "$0")/.."
SITE=${1:-docs/_build/html}
OUT=${2:-docs/screenshots}
BROWSER=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
if [ -z "$BROWSER" ]; then
    echo "screenshots.sh: no Chromium found (Debian: apt-get install chromium)" >&2
    exit 2
fi
if [ ! -f "$SITE/index.html" ]; then
    echo "screenshots.sh: $SITE/index.html not found: build the docs first" >&2
    exit 2
fi
mkdir -p "$OUT"
SITE=$(cd "$SITE" && pwd)
# name  page  height (px)
PAGES="index index.html 1400
theory theory.html 2600
api_kernel _generated/api/rftheory.kernel.rf_kernel_series.html 2200
api_module _generated/api/rftheory.hermite.html 1600
gallery gallery.html 5200
claim_theorem1 _generated/claims/theorem1.html 3600
cli cli.html 1600"
while read -r name page height; do
    if [ ! -f "$SITE/$page" ]; then
        echo "screenshots.sh: $page not in the site" >&2
        exit 1
    fi
    "$BROWSER" --headless --no-sandbox --disable-gpu --hide-scrollbars --no-first-run \
        --disable-extensions --allow-file-access-from-files --virtual-time-budget=15000 \
        --window-size=1280,"$height" --screenshot="$OUT/$name.png" "file://$SITE/$page" \
        >/dev/null 2>&1
    echo "$OUT/$name.png  <- $page"
done <<< "$PAGES"
