#!/bin/sh
# Install the lab: the pinned, unmodified agent CLIs that the real-client tests and captures/ use.
#
# The "Install (pinned versions)" of tests/fixtures/lab/README.md, into LAB (default <repo>/.lab,
# gitignored). About 1.6 GB from the npm registry. Safe to re-run: each part is skipped once installed
# (delete its folder, or pass --force, to reinstall). `make test` never needs this; tests skip without it.
#
# Usage: tools/install-lab.sh [--force]      LAB=/elsewhere tools/install-lab.sh
set -eu

ROOT=$(cd "$(dirname "$0")/.." && pwd)
LAB=${LAB:-$ROOT/.lab}
FORCE=0
[ "${1:-}" = "--force" ] && FORCE=1

need() { command -v "$1" >/dev/null 2>&1 || { echo "install-lab: '$1' is required but not on PATH" >&2; exit 1; }; }
need node
need npm
need python3

say() { echo "install-lab: $*" >&2; }
NPM="npm --no-audit --no-fund --loglevel=error"

# installed DIR PACKAGE VERSION -> true when DIR/node_modules/PACKAGE/package.json has that version.
installed() {
  [ "$FORCE" = 0 ] || return 1
  f="$1/node_modules/$2/package.json"
  [ -f "$f" ] && node -e 'process.exit(require(require("path").resolve(process.argv[1])).version === process.argv[2] ? 0 : 1)' "$f" "$3" 2>/dev/null
}

mkdir -p "$LAB"
cd "$LAB"
say "LAB=$LAB"

if installed . @anthropic-ai/claude-code 2.1.197 && installed . @openai/codex 0.169.0 \
   && installed . opencode-ai 1.18.33 && installed . @codebuff/sdk 0.10.7; then
  say "root packages already installed"
else
  [ -f package.json ] || echo '{"name": "wirecap-lab", "private": true}' > package.json
  say "installing claude-code 2.1.197, codex 0.169.0, opencode-ai 1.18.33, @codebuff/sdk 0.10.7"
  $NPM install --save-exact @anthropic-ai/claude-code@2.1.197 @openai/codex@0.169.0 opencode-ai@1.18.33 @codebuff/sdk@0.10.7
fi

# sub DIR PACKAGE@VERSION... : a separate npm project (these pin conflicting versions of shared packages).
sub() {
  dir=$1; shift
  mkdir -p "$dir"
  (cd "$dir" && { [ -f package.json ] || echo "{\"name\": \"lab-$dir\", \"private\": true}" > package.json; } && $NPM install --save-exact "$@" --ignore-scripts)
}

if installed cb115 codebuff 1.0.115; then say "cb115 already installed"
else say "installing codebuff 1.0.115 into cb115/"; sub cb115 codebuff@1.0.115; fi

if installed cbsdk0313 @codebuff/sdk 0.3.13; then say "cbsdk0313 already installed"
else say "installing @codebuff/sdk 0.3.13 into cbsdk0313/"; sub cbsdk0313 @codebuff/sdk@0.3.13; fi

if installed codebuddy @tencent-ai/agent-sdk 0.3.201 && installed codebuddy zod 4.6.7; then
  say "codebuddy already installed"
else say "installing @tencent-ai/agent-sdk 0.3.201 + zod 4.6.7 into codebuddy/"
  sub codebuddy @tencent-ai/agent-sdk@0.3.201 zod@4.6.7; fi

if [ "$FORCE" = 0 ] && [ -x venv/bin/python ] && venv/bin/python -c 'import websockets, sys; sys.exit(websockets.__version__ != "17.4")' 2>/dev/null; then
  say "venv already installed"
else
  say "creating venv/ with websockets 17.4"
  python3 -m venv venv
  venv/bin/pip install --quiet --disable-pip-version-check websockets==17.4
fi

# The runners cd into these working directories; they must exist.
mkdir -p work_main work_cb work_codex work_opencode

# Smoke check: every binary the runners use answers --version.
fail=0
for b in node_modules/.bin/claude node_modules/.bin/codex node_modules/.bin/opencode \
         codebuddy/node_modules/@tencent-ai/agent-sdk/cli/bin/codebuddy; do
  if [ -e "$b" ]; then say "ok  $b"; else say "MISSING $b"; fail=1; fi
done
[ -f cb115/node_modules/codebuff/dist/index.js ] && say "ok  cb115/node_modules/codebuff/dist/index.js" \
  || { say "MISSING cb115/node_modules/codebuff/dist/index.js"; fail=1; }
[ "$fail" = 0 ] && say "done: export WIRECAP_LAB=$LAB (or keep it at <repo>/.lab)"
exit "$fail"
