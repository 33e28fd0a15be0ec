#!/usr/bin/env bash
# spotboard's task runner. `./tasks.sh help` lists the tasks.
# Every task installs what it needs first (idempotent: a warm machine skips each step in
# milliseconds), so the README's first two commands work on a fresh machine.
set -euo pipefail
cd "$(dirname "$0")"

CARGO_LEPTOS_VERSION=0.3.10   # 0.3.11 needs rustc 1.96 (shared/TOOLCHAIN.md)
BINARYEN_VERSION=132.0.0      # Debian's wasm-opt 108 breaks hydration; npm's 132 works
CHECKOV_VERSION=3.3.30          # the deployment manifests' policy check (PyPI)
KUBERNETES_VALIDATE_VERSION=1.37.0  # Kubernetes JSON schemas, 1.33 among them (PyPI)

log() { printf '\033[1m==> %s\033[0m\n' "$*" >&2; }

need_rust() {
  if ! rustup target list --installed 2>/dev/null | grep -qx wasm32-unknown-unknown; then
    log "adding the wasm32-unknown-unknown target"
    rustup target add wasm32-unknown-unknown
  fi
  if [ "$(cargo leptos --version 2>/dev/null | awk '{print $2}')" != "$CARGO_LEPTOS_VERSION" ]; then
    log "installing cargo-leptos $CARGO_LEPTOS_VERSION (once)"
    # cargo-leptos's own release profile is fat LTO in one codegen unit, whose last step runs on
    # one core, for a tool that only starts builds. Without them it installed in 10 min 45 s on
    # 2 cores (2026-11-24; README "first run").
    CARGO_PROFILE_RELEASE_LTO=false CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16 \
      cargo install cargo-leptos --locked --version "$CARGO_LEPTOS_VERSION"
  fi
  # cargo-leptos would download wasm-bindgen from GitHub, which is unreachable here; it uses
  # the one on PATH when the version matches Cargo.lock exactly.
  local want
  want=$(awk '/^name = "wasm-bindgen"$/{getline; gsub(/"/,"",$3); print $3; exit}' Cargo.lock)
  if [ "$(wasm-bindgen --version 2>/dev/null | awk '{print $2}')" != "$want" ]; then
    log "installing wasm-bindgen-cli $want (about 2 minutes, once)"
    cargo install wasm-bindgen-cli --version "$want"
  fi
}

need_node_modules() {
  if [ ! -x end2end/node_modules/.bin/playwright ] || [ ! -x end2end/node_modules/.bin/wasm-opt ] \
      || [ ! -f end2end/node_modules/echarts/dist/echarts.min.js ] \
     || [ end2end/package-lock.json -nt end2end/node_modules/.package-lock.json ]; then
    log "installing end2end npm packages (Playwright without browsers, binaryen $BINARYEN_VERSION, ECharts)"
    (cd end2end && npm ci --no-audit --no-fund)
  fi
  export PATH="$PWD/end2end/node_modules/.bin:$PATH"
  # The Capacity Finder's chart library, served from our own origin (no CDN): cargo-leptos
  # copies public/ into the site.
  mkdir -p public/vendor
  cp -u end2end/node_modules/echarts/dist/echarts.min.js public/vendor/echarts.min.js
}

need_chromium() {
  if ! command -v chromium >/dev/null 2>&1; then
    log "installing Debian's Chromium for Playwright"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium
  fi
}

# A throwaway PostgreSQL on loopback for the ledger's PostgreSQL tests (Debian's package).
need_postgres() {
  local bin port=54329 data=/tmp/spotboard-pg
  if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
    log "installing Debian's PostgreSQL for the ledger tests"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql
  fi
  bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
  if ! "$bin/pg_isready" -q -h 127.0.0.1 -p "$port"; then
    log "starting PostgreSQL on 127.0.0.1:$port ($data)"
    local as=()
    # PostgreSQL refuses to run as root.
    if [ "$(id -u)" = 0 ]; then as=(runuser -u postgres --); fi
    rm -rf "$data" && mkdir -p "$data"
    if [ "$(id -u)" = 0 ]; then chown postgres "$data"; fi
    "${as[@]}" "$bin/initdb" -D "$data" -A trust -U postgres >/dev/null
    "${as[@]}" "$bin/pg_ctl" -D "$data" -l "$data/log" -w \
      -o "-c listen_addresses=127.0.0.1 -p $port -k /tmp -c fsync=off" start >/dev/null
  fi
  export SPOTBOARD_TEST_DATABASE_URL="postgres://postgres@127.0.0.1:$port/postgres"
}

# Kubernetes clients nobody here wrote, for the embedded cluster's compatibility tests: the
# official Python client and kr8s, in a virtualenv of the project's (.tools/py).
PY_CLIENTS="kubernetes==37.0.2 kr8s==0.20.15"
need_python_clients() {
  local py=.tools/py/bin/python
  if ! "$py" -c 'import kubernetes, kr8s' >/dev/null 2>&1; then
    log "installing the Python Kubernetes clients ($PY_CLIENTS) into .tools/py"
    command -v python3 >/dev/null 2>&1 && python3 -m venv .tools/py 2>/dev/null || {
      apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3 python3-venv
      python3 -m venv .tools/py
    }
    .tools/py/bin/pip install --quiet --disable-pip-version-check $PY_CLIENTS
  fi
  SPOTBOARD_TEST_PYTHON="$PWD/$py"
  export SPOTBOARD_TEST_PYTHON
}

need_kubectl() {
  command -v kubectl >/dev/null 2>&1 || { echo "kubectl is not on PATH: the kubectl tests need it" >&2; exit 1; }
}

cmd_serve() { # Serve the dashboard on the embedded cluster at http://127.0.0.1:3000
  need_rust
  need_node_modules
  # Release assets go out precompressed (brotli and gzip files beside each one; the server
  # picks by Accept-Encoding): the wasm is about a third of its size in brotli. `--split`: the
  # pages other than `/` are lazy routes, each in its own part of the wasm (app/src/pages/lazy.rs).
  cargo leptos serve --release --precompress --split -- "$@"
}

cmd_test() { # Run every test: unit, integration (kube-rs + kubectl), Playwright in Chromium
  need_rust
  need_node_modules
  need_chromium
  need_kubectl
  need_postgres
  need_python_clients
  log "unit and integration tests"
  cargo test --workspace --locked
  log "the tests that must run alone (they count the whole process's heap)"
  cargo test --locked -p server --test it -- --ignored --test-threads 1
  log "end-to-end tests (Playwright, Debian Chromium)"
  cmd_e2e
  log "deployment manifests and the Containerfile"
  cmd_deploy
}

cmd_e2e() { # Build the site and run only the Playwright tests
  need_rust
  need_node_modules
  need_chromium
  export SPOTBOARD_SPEED="${SPOTBOARD_SPEED:-60}"
  export SPOTBOARD_EMBEDDED_KUBECONFIG="$PWD/end2end/.kubeconfig"
  # A fresh ledger per run: the savings test compares the page with what this run recorded.
  SPOTBOARD_LEDGER="$(mktemp -d)/ledger.sqlite"
  export SPOTBOARD_LEDGER
  # Debug build: it shares compiled dependencies with `cargo test`, which halves CI time.
  # Split as the release build is: the lazy routes' loader is only there when split.
  cargo leptos end-to-end --split
}

cmd_faults() { # The fault suite: injects each fault and prints one table (docs/reliability.md)
  need_rust
  need_postgres
  need_python_clients
  local out
  out=$(mktemp)
  # More repetitions than the test task uses: R1 50 outages, R2 100 expiries.
  SPOTBOARD_FAULT_RUNS="${SPOTBOARD_FAULT_RUNS:-50}" cargo test --locked --no-fail-fast -p server \
    --test it -- faults:: process:: ledger:: dashboard:: security:: replicas:: \
    --nocapture --test-threads 2 2>&1 | tee "$out" | grep -E '^test |test result' >&2 || true
  # R4 counts the process's heap: alone, so no other test's allocations count as its own.
  SPOTBOARD_FAULT_RUNS="${SPOTBOARD_FAULT_RUNS:-50}" cargo test --locked --no-fail-fast -p server \
    --test it -- --ignored faults:: --nocapture --test-threads 1 2>&1 | tee -a "$out" \
    | grep -E '^test |test result' >&2 || true
  echo
  echo "| fault | what | runs | recovered | max ms | p95 ms | rows lost | phantom rows | 5xx | bytes held | notes |"
  echo "|---|---|---|---|---|---|---|---|---|---|---|"
  grep -E '^FAULT\|' "$out" | sort -t'|' -k2,2V | cut -d'|' -f2- | sed -E 's/^/| /; s/$/ |/'
  ! grep -qE '^test result: FAILED' "$out"
}

cmd_lint() { # cargo fmt --check, and clippy -D warnings for the ssr and hydrate feature sets
  need_rust
  cargo fmt --all -- --check
  cargo clippy --locked -p server -p spotboard-embedded --all-targets -- -D warnings
  # A production build may leave the embedded cluster (and its admin-token API server) out.
  cargo clippy --locked -p server --no-default-features --lib --bins -- -D warnings
  cargo clippy --locked -p app --lib --features hydrate --target wasm32-unknown-unknown -- -D warnings
}

cmd_crd() { # Regenerate the committed NodePool CRD YAML
  cargo run --quiet --locked -p server -- crd > server/crd/nodepools.compute.coreweave.com.yaml
}

cmd_bench() { # Scale benchmark: RSS, bytes per node change, stream latency, watch count
  need_rust
  # With the name cargo-leptos gives the site: a plain build would otherwise replace the served
  # `target/release/spotboard` with one whose pages ask for `spotboard_bg.wasm` and never load.
  # The same type-erased components as `cargo leptos build --release` (Cargo.toml's
  # `always-erase-components`): the same binary is measured, and the build reuses its cache.
  LEPTOS_OUTPUT_NAME=spotboard RUSTFLAGS="--cfg erase_components" \
    cargo build --release --locked -p server --bins
  target/release/spotboard-bench "$@"
}

cmd_perf() { # Browser figures (P3, P3b, P5): release build, 10k nodes in 2,000 pools, Chromium
  need_rust
  need_node_modules
  need_chromium
  cmd_release
  local dir port="${SPOTBOARD_PERF_PORT:-3100}" pid
  dir=$(mktemp -d)
  # One CKS zone holds every node: the wave and the churn go to one API server.
  target/release/spotboard --listen "127.0.0.1:$port" --nodes 10000 --nodes-per-pool 5 \
    --zones US-EAST-04A --gke-zones '' --karpenter-zones '' \
    --embedded-kubeconfig "$dir/kubeconfig" --ledger "$dir/ledger.sqlite" > "$dir/server.log" 2>&1 &
  pid=$!
  # shellcheck disable=SC2064
  trap "kill $pid 2>/dev/null; rm -rf '$dir'" EXIT
  local i
  for i in $(seq 1 300); do
    curl -sf "http://127.0.0.1:$port/readyz" >/dev/null 2>&1 && break
    kill -0 "$pid" 2>/dev/null || { cat "$dir/server.log" >&2; exit 1; }
    sleep 1
  done
  log "perf: the server listed everything after ${i} s; measuring in Chromium"
  (cd end2end && SPOTBOARD_BASE_URL="http://127.0.0.1:$port" SPOTBOARD_PERF_KUBECONFIG="$dir/kubeconfig" \
    npx playwright test --config perf.config.ts "$@")
}

cmd_release() { # Build the release binary and the precompressed site (what server/Containerfile copies)
  need_rust
  need_node_modules
  cargo leptos build --release --precompress --split
}

need_deploy_tools() {
  local py=.tools/deploy-py/bin/python
  if ! "$py" -c 'import checkov, kubernetes_validate' >/dev/null 2>&1; then
    log "installing checkov $CHECKOV_VERSION and kubernetes-validate $KUBERNETES_VALIDATE_VERSION into .tools/deploy-py"
    command -v python3 >/dev/null 2>&1 && python3 -m venv .tools/deploy-py 2>/dev/null || {
      apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3 python3-venv
      python3 -m venv .tools/deploy-py
    }
    .tools/deploy-py/bin/pip install --quiet --disable-pip-version-check \
      "checkov==$CHECKOV_VERSION" "kubernetes-validate==$KUBERNETES_VALIDATE_VERSION"
  fi
}

cmd_deploy() { # Render every kustomize overlay, validate it (Kubernetes 1.33 schemas, checkov) and check the Containerfile
  need_kubectl
  need_deploy_tools
  local out
  out="$(mktemp -d)"
  for dir in server/deploy/base server/deploy/overlays/*/; do
    local name
    name="$(basename "$dir")"
    log "deploy: $dir"
    kubectl kustomize "$dir" > "$out/$name.yaml"
    .tools/deploy-py/bin/kubernetes-validate --quiet --strict -k 1.33.0 "$out/$name.yaml"
  done
  # --skip-download: checkov would otherwise ask Prisma Cloud for guidelines; nothing leaves
  # this machine. Skipped checks are named with their reason in the manifests.
  .tools/deploy-py/bin/checkov --quiet --compact --skip-download --framework kubernetes -d "$out"
  log "deploy: the Containerfile's inputs, after cargo leptos build --release"
  cmd_release
  grep -oE '^COPY --from=build /src/[^ ]+' server/Containerfile | sed 's|^COPY --from=build /src/||' | while read -r path; do
    [ -e "$path" ] || { echo "server/Containerfile copies $path, which the release build did not make" >&2; exit 1; }
  done
  [ -f target/site/pkg/spotboard.wasm ] || { echo "the site has no pkg/spotboard.wasm" >&2; exit 1; }
  [ -f target/site/pkg/__wasm_split_manifest.json ] || { echo "the site was built without --split: its lazy routes cannot load" >&2; exit 1; }
  target/release/spotboard --help >/dev/null
  # The image's default command: its flags must parse (exit 2 is a usage error). Outside a
  # pod it then stops on the missing in-cluster credentials, which is expected here.
  local args rc=0
  args="$(sed -n 's/^CMD \[\(.*\)\]$/\1/p' server/Containerfile | tr -d '",')"
  # shellcheck disable=SC2086
  env -u KUBERNETES_SERVICE_HOST timeout 20 target/release/spotboard $args --auth-proxy-header X-Forwarded-User \
    --ledger "$out/ledger.sqlite" \
    > "$out/cmd.log" 2>&1 || rc=$?
  if [ "$rc" = 2 ] || grep -q "^Usage:" "$out/cmd.log"; then
    echo "server/Containerfile's CMD does not parse:" >&2; cat "$out/cmd.log" >&2; exit 1
  fi
  rm -rf "$out"
}

cmd_help() { # List the tasks
  echo "usage: ./tasks.sh <task> [args]"
  grep -E '^cmd_[a-z0-9]+\(\) \{ #' "$0" | sed -E 's/^cmd_([a-z0-9]+)\(\) \{ # ?(.*)/  \1\t\2/' | expand -t 12
}

task="${1:-help}"
shift || true
if declare -F "cmd_$task" >/dev/null; then
  "cmd_$task" "$@"
else
  echo "unknown task: $task" >&2
  cmd_help
  exit 2
fi
