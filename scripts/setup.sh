#!/usr/bin/env bash
# Idempotent set-up for a fresh Debian 12 machine: Debian packages, the Python
# virtual environment at .venv/ (pinned by constraints.txt), the Go code
# generators and helm in .tools/bin, and the Go module cache.
# Usage: scripts/setup.sh [--with-helm]
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
TOOLS=$ROOT/.tools/bin
mkdir -p "$TOOLS"

log() { echo "setup: $*" >&2; }

# Debian packages (redis-server for the page frames; jq/iproute2 for scripts; node and
# chromium for satpage view).
need_apt=()
command -v redis-server >/dev/null || need_apt+=(redis-server)
command -v redis-benchmark >/dev/null || need_apt+=(redis-tools)
# satpage view: node/npm build its front end (sim/web); chromium + chromedriver run its
# browser tests (sim/tests/test_view_browser.py, selenium).
command -v npm >/dev/null || need_apt+=(nodejs npm)
command -v chromium >/dev/null || need_apt+=(chromium)
command -v chromedriver >/dev/null || need_apt+=(chromium-driver)
if ((${#need_apt[@]})); then
  log "apt-get install ${need_apt[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null
  apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi
# The packaged service may have started a redis on 6379: tests start their own.

# Python: one venv, four editable packages, pinned. compat mode puts each
# component folder on sys.path, so the repo-root folder pager/ cannot shadow
# the package pager/pager/ as a namespace package.
PY=${PYTHON:-python3.11}
command -v "$PY" >/dev/null || PY=python3
if [[ ! -x .venv/bin/python ]]; then
  log "creating .venv with $PY"
  "$PY" -m venv .venv
fi
stamp=.venv/.satpage-installed
if [[ ! -f $stamp || constraints.txt -nt $stamp || orbit-model/pyproject.toml -nt $stamp \
      || pager/pyproject.toml -nt $stamp || client/pyproject.toml -nt $stamp \
      || sim/pyproject.toml -nt $stamp ]]; then
  log "pip install (constraints.txt)"
  .venv/bin/python -m pip install -q --upgrade pip
  .venv/bin/python -m pip install -q -c constraints.txt -r requirements-dev.txt \
    --config-settings editable_mode=compat -e orbit-model -e pager -e client -e sim
  touch "$stamp"
fi

# The wheels' dependencies as a local wheelhouse outside the checkout (one download,
# shared by every clone; again only when the pins or the packages' dependencies
# change, by content): sim/tests/test_wheels.py installs `make wheels` into a fresh
# virtual environment from it with --no-index, so the test neither waits on PyPI
# nor needs it.
WHEELHOUSE=${SATPAGE_WHEELHOUSE:-$HOME/.cache/satpage/wheels}
wstamp=$WHEELHOUSE/.satpage-downloaded
wwant=$(cat constraints.txt {orbit-model,pager,client,sim}/pyproject.toml | sha256sum | cut -d' ' -f1)
if [[ "$(cat "$wstamp" 2>/dev/null)" != "$wwant" ]]; then
  log "pip download the wheels' dependencies into $WHEELHOUSE"
  mkdir -p "$WHEELHOUSE"
  .venv/bin/python -m pip download -q -d "$WHEELHOUSE" -c constraints.txt \
    ./orbit-model ./pager ./client ./sim
  echo "$wwant" > "$wstamp"
fi

# satpage view's front end: pinned npm dependencies (package-lock.json), bundled by
# esbuild into sim/satpage/view/static/view.js (committed; `make view-check` compares).
if [[ ! -d sim/web/node_modules || sim/web/package-lock.json -nt sim/web/node_modules ]]; then
  log "npm ci (sim/web)"
  (cd sim/web && npm ci --no-audit --no-fund --loglevel=error)
fi
(cd sim/web && npm run --silent build >/dev/null)

# Go: code generators pinned here, the module cache, and optionally helm.
PROTOC_GEN_GO=v1.36.12
PROTOC_GEN_GO_GRPC=v1.6.2
HELM=v3.21.4
export GOBIN=$TOOLS GOFLAGS=-mod=mod
if [[ "$("$TOOLS/protoc-gen-go" --version 2>/dev/null)" != "protoc-gen-go $PROTOC_GEN_GO" ]]; then
  log "go install protoc-gen-go@$PROTOC_GEN_GO"
  go install "google.golang.org/protobuf/cmd/protoc-gen-go@$PROTOC_GEN_GO"
fi
if [[ "$("$TOOLS/protoc-gen-go-grpc" --version 2>/dev/null)" != "protoc-gen-go-grpc ${PROTOC_GEN_GO_GRPC#v}" ]]; then
  log "go install protoc-gen-go-grpc@$PROTOC_GEN_GO_GRPC"
  go install "google.golang.org/grpc/cmd/protoc-gen-go-grpc@$PROTOC_GEN_GO_GRPC"
fi
(cd services && go mod download)
# `go install` stamps no patch version into helm (`helm version` says v3.21),
# so a stamp file records which version .tools/bin/helm was built from.
if [[ "${1:-}" == "--with-helm" ]] && [[ ! -x $TOOLS/helm || "$(cat "$TOOLS/.helm-version" 2>/dev/null)" != "$HELM" ]]; then
  log "go install helm $HELM (about a minute the first time)"
  go install "helm.sh/helm/v3/cmd/helm@$HELM"
  echo "$HELM" > "$TOOLS/.helm-version"
fi
log "ready"
