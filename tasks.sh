#!/usr/bin/env bash
# spotboard's task runner. `./tasks.sh help` lists the tasks.
# Every task installs what it needs first (idempotent: a warm machine skips each step in
# milliseconds), so the README's first two commands work on a fresh machine.
set -euo pipefail
cd "$(dirname "$0")"

BINARYEN_VERSION=132.0.0      # Debian's wasm-opt 108 breaks hydration; npm's 132 works
CHECKOV_VERSION=3.3.30          # the deployment manifests' policy check (PyPI)
KUBERNETES_VALIDATE_VERSION=1.37.0  # Kubernetes JSON schemas, 1.33 among them (PyPI)

log() { printf '\033[1m==> [%s] %s\033[0m\n' "$(date +%T)" "$*" >&2; }

# wasm-bindgen needs no CLI: the site tool links its library at the lock's version
# (tools/site/src/bindgen.rs).
need_rust() {
  need_wasm_target
}

need_wasm_target() {
  if ! rustup target list --installed 2>/dev/null | grep -qx wasm32-unknown-unknown; then
    log "adding the wasm32-unknown-unknown target"
    rustup target add wasm32-unknown-unknown
  fi
}

need_node_modules() {
  if [ ! -x end2end/node_modules/.bin/playwright ] || [ ! -x end2end/node_modules/.bin/wasm-opt ] \
      || [ ! -x end2end/node_modules/.bin/esbuild ] || [ ! -x end2end/node_modules/.bin/lightningcss ] \
      || [ ! -f end2end/node_modules/echarts/dist/echarts.min.js ] \
     || [ end2end/package-lock.json -nt end2end/node_modules/.package-lock.json ]; then
    log "installing end2end npm packages (Playwright without browsers, binaryen $BINARYEN_VERSION, esbuild, lightningcss, ECharts)"
    (cd end2end && npm ci --no-audit --no-fund)
  fi
  export PATH="$PWD/end2end/node_modules/.bin:$PATH"
  # The Capacity Finder's chart library, served from our own origin (no CDN): the site build
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

# A real Prometheus for the DCGM utilisation tests (Debian's package): each test starts its
# own on loopback, scraping the embedded cluster's DCGM exporter.
need_prometheus() {
  if ! command -v prometheus >/dev/null 2>&1; then
    log "installing Debian's Prometheus for the GPU utilisation tests"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq prometheus
  fi
  SPOTBOARD_TEST_PROMETHEUS=$(command -v prometheus)
  export SPOTBOARD_TEST_PROMETHEUS
}

# Clients nobody here wrote: for the embedded cluster's compatibility tests the official Python
# Kubernetes client and kr8s, Prometheus' own parser for /metrics (prometheus-client), and an
# independent Kaplan-Meier for the survival curves (lifelines), in a virtualenv of the
# project's (.tools/py).
PY_CLIENTS="kubernetes==37.0.2 kr8s==0.20.15 prometheus-client==0.26.0 lifelines==0.30.3"
need_python_clients() {
  local py=.tools/py/bin/python
  if ! "$py" -c 'import kubernetes, kr8s, prometheus_client, lifelines' >/dev/null 2>&1; then
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

# The site the server sends to browsers (target/site): the wasm of every page split at its lazy
# routes, wasm-bindgen's JS, the CSS and public/. What cargo-leptos 0.3.10's `build --split`
# (`--release --precompress` for a release) did, with tools that install in seconds or are needed
# anyway, instead of a build tool that took 11-24.5 minutes to compile (tools/site/src/main.rs has
# the steps). `build_site release` also optimises, minifies and precompresses.
SITE=target/site
# The site's builds have a target directory of their own (as cargo-leptos had): they share no
# compiled crate with the server's (the wasm's proc macros are built without the workspace's
# rustflags), and with their own lock they run beside a server build instead of waiting for it.
FRONT=target/front
# The site tool (tools/site) builds in the site's target directory too, so `serve` need not wait
# for the server's lock; the test task builds it in the workspace's, where `cargo test
# --workspace` has already compiled it (TOOL_TARGET=target).
TOOL_TARGET=${TOOL_TARGET:-$FRONT}
build_site() {
  site_compile "$1"
  site_assemble "$1"
}

# A site mode's cargo profile: release -> wasm-release (small), serve -> serve (the first run's
# quick compile, Cargo.toml), anything else -> dev.
site_profile() {
  case "$1" in release) echo wasm-release ;; serve) echo serve ;; *) echo dev ;; esac
}
# The directory cargo writes a profile's output to.
profile_dir() { if [ "$1" = dev ]; then echo debug; else echo "$1"; fi; }
# The site tool's profile: the serve profile in `serve` (one set of dependencies compiled, at
# opt-level 0), dev elsewhere (where the tests have compiled it).
tool_profile() { if [ "$1" = serve ]; then echo serve; else echo dev; fi; }

# The cargo half: the wasm and the site tool.
site_compile() {
  log "site ($1): the wasm"
  cargo build --locked -p app --lib --target wasm32-unknown-unknown --no-default-features \
    --features hydrate --profile "$(site_profile "$1")" --target-dir "$FRONT"
  cargo build --locked --quiet -p spotboard-site --profile "$(tool_profile "$1")" \
    --target-dir "$TOOL_TARGET"
}

# The rest, from the wasm to the site (needs the npm tools).
site_assemble() {
  local mode="$1" wasm_dir pkg="$SITE/pkg" tool
  tool="$TOOL_TARGET/$(profile_dir "$(tool_profile "$mode")")/spotboard-site"
  wasm_dir=$FRONT/wasm32-unknown-unknown/$(profile_dir "$(site_profile "$mode")")
  rm -rf "$SITE" && mkdir -p "$pkg"
  log "site ($mode): split, wasm-bindgen, CSS, assets"
  local parts
  parts=$("$tool" split "$wasm_dir/app.wasm" "$pkg" "$wasm_dir/app_split.wasm")
  "$tool" bindgen --out-name=spotboard "$wasm_dir/app_split.wasm" "$pkg"
  # leptos asks for `{name}.wasm` (LEPTOS_OUTPUT_NAME, .cargo/config.toml).
  mv "$pkg/spotboard_bg.wasm" "$pkg/spotboard.wasm"
  local css=(--targets defaults)
  if [ "$mode" = release ]; then css+=(--minify); fi
  lightningcss "${css[@]}" style/main.css -o "$pkg/spotboard.css"
  cp -r public/. "$SITE/"
  if [ "$mode" = release ]; then
    log "site: wasm-opt -Oz on the main module and $(echo "$parts" | wc -l) parts, esbuild --minify, precompress"
    # The flags cargo-leptos gives wasm-opt; one file per core.
    printf '%s\n' "$pkg/spotboard.wasm" $parts | xargs -P "$(nproc)" -I{} \
      wasm-opt -Oz --enable-bulk-memory --enable-nontrapping-float-to-int {} -o {}
    # `--log-level=error`: esbuild warns that wasm-bindgen's import object names the split
    # loader twice (the same module, so either key is right); nothing to act on.
    esbuild --minify --format=esm --log-level=error "$pkg/spotboard.js" --outfile="$pkg/spotboard.min.js"
    mv "$pkg/spotboard.min.js" "$pkg/spotboard.js"
    "$tool" precompress "$SITE"
    "$tool" check "$SITE" tools/site/files.txt --precompressed
  else
    "$tool" check "$SITE" tools/site/files.txt
  fi
}

# What a task will install or compile before it starts, with what it is expected to take on 2
# cores (measured from nothing installed, docs/performance.md "First run"). Prints nothing for
# what is already there.
doctor_lines() {
  command -v cargo >/dev/null 2>&1 || echo "MISSING rustup/cargo: install Rust 1.95 with rustup first (not done by tasks.sh)"
  command -v npm >/dev/null 2>&1 || echo "MISSING node and npm: install Node.js 20 and npm first (not done by tasks.sh)"
  rustup target list --installed 2>/dev/null | grep -qx wasm32-unknown-unknown \
    || echo "install  the wasm32-unknown-unknown target (rustup; under a minute)"
  [ -x end2end/node_modules/.bin/esbuild ] && [ -x end2end/node_modules/.bin/wasm-opt ] \
    || echo "install  the npm packages in end2end/ (binaryen, esbuild, lightningcss, ECharts, Playwright; under a minute)"
  if [ "${1:-}" = serve ]; then
    [ -x "target/$(profile_dir "${SPOTBOARD_BUILD:-serve}")/spotboard" ] \
      || echo "compile  the server, the site's wasm and the site tool side by side (serve profile: about 6 minutes on 2 cores from nothing, 338 and 373 s to the first page on 2026-11-29; docs/performance.md#first-run)"
  fi
  if [ "${1:-}" = test ]; then
    [ -d target/debug/deps ] \
      || echo "compile  the workspace and its tests (dev profile: most of the test task's 23 minutes on 2 cores from nothing)"
    command -v chromium >/dev/null 2>&1 || echo "install  Debian's Chromium (apt-get; about a minute)"
    ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || echo "install  Debian's PostgreSQL (apt-get; under a minute)"
    command -v prometheus >/dev/null 2>&1 || echo "install  Debian's Prometheus (apt-get; under a minute)"
    command -v kubectl >/dev/null 2>&1 || echo "MISSING kubectl on the PATH (the kubectl tests need it)"
    [ -x .tools/py/bin/python ] || echo "install  the Python kubernetes, kr8s, prometheus-client and lifelines packages into .tools/py (pip; about a minute)"
    [ -x .tools/deploy-py/bin/python ] || echo "install  checkov and kubernetes-validate into .tools/deploy-py (pip; about a minute)"
  fi
}

cmd_doctor() { # Say what is missing and how long installing it is expected to take; change nothing
  local lines
  lines=$(doctor_lines "${1:-test}")
  if [ -z "$lines" ]; then
    echo "everything ./tasks.sh serve and ./tasks.sh test need is here"
  else
    echo "$lines"
    ! grep -q '^MISSING' <<<"$lines"
  fi
}

cmd_serve() { # Serve the dashboard on the embedded cluster at http://127.0.0.1:3000
  local todo
  todo=$(doctor_lines serve)
  if [ -n "$todo" ]; then
    log "before serving, this machine needs:"
    sed 's/^/    /' <<<"$todo" >&2
    if grep -q '^MISSING' <<<"$todo"; then exit 1; fi
  fi
  need_wasm_target
  need_node_modules
  # The server in the `serve` profile (Cargo.toml: the dev profile with every dependency at
  # opt-level 0): on a fresh machine the first `serve` spends its minutes compiling, and
  # optimising the dependencies made that compile about 2.5 times longer (k8s-openapi alone:
  # 17.9 s at opt-level 0, 44.8 s at 1); the demo fleet needs no optimised code. The tests keep
  # the dev profile, so `serve` and `test` compile the dependencies once each.
  # `./tasks.sh release` builds the optimised binary and site that server/Containerfile ships
  # (docs/operations.md); SPOTBOARD_BUILD=release serves those instead, SPOTBOARD_BUILD=debug
  # the tests' build.
  local mode=${SPOTBOARD_BUILD:-serve} logs
  case "$mode" in serve | debug | release) ;; *)
    echo "SPOTBOARD_BUILD is serve, debug or release, not '$mode'" >&2; exit 2 ;;
  esac
  local profile
  profile=$([ "$mode" = debug ] && echo dev || echo "$mode")
  logs=$(mktemp -d)
  # The server and the site compile side by side, in target directories of their own: each
  # has long stretches on one core (a big crate, a link), which the other fills.
  log "compiling the server ($profile profile) alongside the site (logs: $logs)"
  cargo build --locked -p server --bin spotboard --profile "$profile" > "$logs/server.log" 2>&1 &
  local server_pid=$!
  site_compile "$mode"
  site_assemble "$mode"
  log "site built; waiting for the server's compile"
  wait "$server_pid" || { tail -n 60 "$logs/server.log" >&2; exit 1; }
  log "serving on http://127.0.0.1:3000 (Ctrl-C stops)"
  LEPTOS_SITE_ROOT="$SITE" exec "target/$(profile_dir "$profile")/spotboard" "$@"
}

cmd_test() { # Run every test: unit, integration (kube-rs + kubectl), Playwright in Chromium
  need_rust
  need_node_modules
  need_chromium
  need_kubectl
  need_postgres
  need_prometheus
  need_python_clients
  if lint_in_builds; then use_clippy_driver; fi
  log "unit and integration tests"
  cargo test --workspace --locked
  log "the tests that must run alone (they count the whole process's heap)"
  # `--workspace`, as above: `-p server` would resolve features for the server alone and
  # compile it again (the embedded cluster's `it` has no ignored test).
  cargo test --workspace --locked --test it -- --ignored --test-threads 1
  # One site for both checks below: the release site (optimised, minified, precompressed) is
  # what the image ships, so Playwright hydrates what users get (Debian's wasm-opt once broke
  # exactly that), and the deploy check finds the files the Containerfile copies. The site tool
  # is the one `cargo test --workspace` compiled.
  TOOL_TARGET=target build_site release
  log "end-to-end tests (Playwright, Debian Chromium) on the release site"
  SPOTBOARD_SITE_BUILT=1 cmd_e2e
  log "deployment manifests and the Containerfile"
  SPOTBOARD_SITE_BUILT=1 cmd_deploy
}

cmd_e2e() { # Build the site and run only the Playwright tests
  need_rust
  need_node_modules
  need_chromium
  export SPOTBOARD_SPEED="${SPOTBOARD_SPEED:-60}"
  # A quiet fleet: the tests preempt the nodes they watch themselves (the demo's early
  # preemptions would put other nodes under notice mid-test).
  export SPOTBOARD_DEMO_PREEMPTIONS="${SPOTBOARD_DEMO_PREEMPTIONS:-false}"
  export SPOTBOARD_EMBEDDED_KUBECONFIG="$PWD/end2end/.kubeconfig"
  # A fresh ledger per run: the savings test compares the page with what this run recorded.
  local dir
  dir="$(mktemp -d)"
  export SPOTBOARD_LEDGER="$dir/ledger.sqlite"
  # The debug site unless SPOTBOARD_BUILD=release (the test task builds the release site
  # first and sets SPOTBOARD_SITE_BUILT), split as the release site is (the lazy routes'
  # loader is only there when split). The server binary is the one `cargo test --workspace`
  # builds for the integration tests (the same features and flags): after the unit and
  # integration tests of `./tasks.sh test` this compiles nothing (`cargo build -p server` would
  # resolve features for the server alone and compile most dependencies again).
  if [ -z "${SPOTBOARD_SITE_BUILT:-}" ]; then build_site "${SPOTBOARD_BUILD:-debug}"; fi
  cargo test --workspace --locked --no-run
  LEPTOS_SITE_ROOT="$SITE" target/debug/spotboard > "$dir/server.log" 2>&1 &
  local pid=$! rc=0
  # shellcheck disable=SC2064
  trap "kill $pid 2>/dev/null; wait $pid 2>/dev/null" EXIT
  # global-setup.ts waits until every watch has listed.
  (cd end2end && npx playwright test "$@") || rc=$?
  kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null || true
  trap - EXIT
  if [ "$rc" != 0 ]; then
    echo "the server's log (last 40 lines):" >&2
    tail -n 40 "$dir/server.log" >&2
  fi
  return "$rc"
}

cmd_screenshots() { # Remake the README's screenshots (docs/img/) from the demo at 1440 x 900, light theme
  need_rust
  need_node_modules
  need_chromium
  local dir
  dir="$(mktemp -d)"
  build_site debug
  cargo build --locked -p server --bin spotboard
  # Real time (speed 1) and the default flags, as a newcomer's `serve`: the demo's first
  # preemption starts by itself within a minute and its card is still in its 7-minute notice
  # window when drawn (the spec also checks it came within 90 s).
  SPOTBOARD_EMBEDDED_KUBECONFIG="$dir/kubeconfig" LEPTOS_SITE_ROOT="$SITE" \
    target/debug/spotboard --listen "${SPOTBOARD_LISTEN:-127.0.0.1:3000}" \
    --ledger "$dir/ledger.sqlite" > "$dir/server.log" 2>&1 &
  local pid=$!
  # shellcheck disable=SC2064
  trap "kill $pid 2>/dev/null; rm -rf '$dir'" EXIT
  (cd end2end && SPOTBOARD_EMBEDDED_KUBECONFIG="$dir/kubeconfig" npx playwright test --config screenshots.config.ts "$@")
  log "wrote docs/img/dashboard.png and docs/img/preemption.png"
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

# CI sets SPOTBOARD_LINT_IN_BUILDS=1 (.ci/run): then the test task compiles the workspace's own
# crates with clippy-driver in place of rustc (cargo's RUSTC_WORKSPACE_WRAPPER, as `cargo
# clippy` does, but building), so the ssr set (every crate, all its tests) and the hydrate set
# (the release wasm) are linted, -D warnings, by the builds the tests need anyway, and `lint`
# checks only what no test builds. Linting them separately checked every dependency again:
# 22 of a clean CI run's minutes (2026-11-27). A lint error fails that build with clippy's
# message, as `./tasks.sh lint` would.
lint_in_builds() { [ -n "${SPOTBOARD_LINT_IN_BUILDS:-}" ]; }

use_clippy_driver() {
  RUSTC_WORKSPACE_WRAPPER=$(rustup which clippy-driver)
  CLIPPY_ARGS="-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__"
  export RUSTC_WORKSPACE_WRAPPER CLIPPY_ARGS
}

cmd_lint() { # cargo fmt --check, and clippy -D warnings for the ssr and hydrate feature sets
  need_rust
  cargo fmt --all -- --check
  if ! lint_in_builds; then
    cargo clippy --locked -p server -p spotboard-embedded -p spotboard-site -p spotboard-bench -p spotboard-core --all-targets -- -D warnings
    cargo clippy --locked -p app --lib --features hydrate --target wasm32-unknown-unknown -- -D warnings
  else
    log "lint: the ssr and hydrate sets are linted by the test task's builds (SPOTBOARD_LINT_IN_BUILDS)"
  fi
  # A production build may leave the embedded cluster (and its admin-token API server) out.
  cargo clippy --locked -p server --no-default-features --lib --bins -- -D warnings
}

cmd_crd() { # Regenerate the committed NodePool CRD YAML
  cargo run --quiet --locked -p server -- crd > server/crd/nodepools.compute.coreweave.com.yaml
}

cmd_bench() { # Scale benchmark: RSS, bytes per node change, stream latency, watch count
  need_rust
  # The same flags as every build (.cargo/config.toml): the binary measured is the one served.
  # One invocation for both: the bench starts the `spotboard` next to its own executable.
  cargo build --release --locked -p server --bin spotboard -p spotboard-bench --bin spotboard-bench
  target/release/spotboard-bench "$@"
}

cmd_perf() { # Browser figures (S6, P3, P3b, P5): release build, 10k nodes in 2,000 pools, Chromium
  need_rust
  need_node_modules
  need_chromium
  cmd_release
  local dir port="${SPOTBOARD_PERF_PORT:-3100}" pid
  dir=$(mktemp -d)
  # One CKS zone holds every node: the wave and the churn go to one API server.
  target/release/spotboard --listen "127.0.0.1:$port" --nodes 10000 --nodes-per-pool 5 \
    --demo-preemptions false \
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
  build_site release
  log "the server (release)"
  cargo build --locked --release -p server --bin spotboard
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
  # The Containerfile's inputs: the site it copies as `./tasks.sh release` builds it (the test
  # task has built it; alone, this builds it), and its CMD's flags parsed by the same program.
  # The server's release build is not repeated here: it compiles the same code with other
  # optimisation settings (15.5 of CI's minutes), so the debug binary the tests built parses
  # the flags; `./tasks.sh release` builds the optimised one.
  log "deploy: the Containerfile's inputs"
  if [ -z "${SPOTBOARD_SITE_BUILT:-}" ]; then need_rust; need_node_modules; build_site release; fi
  # The binary of `cargo test --workspace` (compiles nothing after the tests; see cmd_e2e).
  cargo test --workspace --locked --no-run --quiet
  local copied
  copied=$(grep -oE '^COPY --from=build /src/[^ ]+' server/Containerfile | sed 's|^COPY --from=build /src/||')
  [ "$copied" = "$(printf '%s\n' target/release/spotboard "$SITE")" ] || {
    echo "server/Containerfile copies $(tr '\n' ' ' <<<"$copied")but ./tasks.sh release makes target/release/spotboard and $SITE" >&2; exit 1; }
  grep -q '^RUN ./tasks.sh release$' server/Containerfile \
    || { echo "server/Containerfile does not build with ./tasks.sh release" >&2; exit 1; }
  [ -f "$SITE/pkg/spotboard.wasm.br" ] || { echo "the site has no precompressed pkg/spotboard.wasm: not a release build" >&2; exit 1; }
  [ -f "$SITE/pkg/__wasm_split_manifest.json" ] || { echo "the site was built without --split: its lazy routes cannot load" >&2; exit 1; }
  target/debug/spotboard --help >/dev/null
  # The image's default command: its flags must parse (exit 2 is a usage error). Outside a
  # pod it then stops on the missing in-cluster credentials, which is expected here.
  local args rc=0
  args="$(sed -n 's/^CMD \[\(.*\)\]$/\1/p' server/Containerfile | tr -d '",')"
  # shellcheck disable=SC2086
  env -u KUBERNETES_SERVICE_HOST timeout 20 target/debug/spotboard $args --auth-proxy-header X-Forwarded-User \
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
