#!/usr/bin/env bash
# Stage the build context of the satpage images (see ../Dockerfile): the static
# satnode and gateway binaries (built from services/), a static grpc_health_probe (health checks inside
# FROM-scratch containers: Swarm HEALTHCHECK, the Helm test pod), and Debian's
# redis-server with exactly the shared libraries and loader it needs plus their
# Debian copyright files. Nothing is downloaded but the pinned Go module of the probe.
#
# Usage: scripts/stage-images.sh [CONTEXT_DIR]     (default build/images/context)
# Needs: Go, Debian redis-server and redis-tools.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
CTX=${1:-$ROOT/build/images/context}
TOOLS=$ROOT/.tools/bin
PROBE_VERSION=${GRPC_HEALTH_PROBE_VERSION:-v0.4.61}

log() { echo "stage-images: $*" >&2; }
die() { echo "stage-images: error: $*" >&2; exit 2; }

static_or_die() { # a binary that must run in an empty root filesystem
	local f=$1
	[[ -x $f ]] || die "$f is missing"
	if ldd "$f" >/dev/null 2>&1; then die "$f is dynamically linked (build it with CGO_ENABLED=0)"; fi
}

rm -rf "$CTX"
mkdir -p "$CTX/redis/data"

# Go daemons: built here as `make build` builds them (CGO off, -trimpath) and with
# the symbol tables left out (-s -w: a third smaller; panics still name functions).
log "go build satnode gateway (CGO_ENABLED=0 -trimpath -ldflags '-s -w')"
(cd services && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$CTX/" ./cmd/satnode ./cmd/gateway)
for b in satnode gateway; do
	static_or_die "$CTX/$b"
	# The foundation's placeholder exits at once; refuse to ship it.
	if "$CTX/$b" --help 2>&1 | grep -q "not built yet"; then
		die "services/cmd/$b is still the placeholder (issue 8): no image to build"
	fi
done

# grpc_health_probe: the community's static gRPC health client, pinned.
# `go install` leaves the probe's version string unset: a stamp file records it.
if [[ ! -x $TOOLS/grpc_health_probe || "$(cat "$TOOLS/.grpc_health_probe.version" 2>/dev/null)" != "$PROBE_VERSION" ]]; then
	log "go install grpc-health-probe@$PROBE_VERSION"
	mkdir -p "$TOOLS"
	GOBIN=$TOOLS CGO_ENABLED=0 GOFLAGS=-mod=mod go install -trimpath -ldflags "-s -w" \
		"github.com/grpc-ecosystem/grpc-health-probe@$PROBE_VERSION"
	mv -f "$TOOLS/grpc-health-probe" "$TOOLS/grpc_health_probe"
	echo "$PROBE_VERSION" >"$TOOLS/.grpc_health_probe.version"
fi
static_or_die "$TOOLS/grpc_health_probe"
install -m 0755 "$TOOLS/grpc_health_probe" "$CTX/grpc_health_probe"

# redis-server: /usr/bin/redis-server is a symlink to redis-check-rdb, and the
# binary picks its mode from argv[0], so the real file is copied as /redis-server.
REDIS=$(command -v redis-server || true)
[[ -n $REDIS ]] || die "redis-server is missing: apt-get install redis-server (scripts/setup.sh does)"
redis_version=$("$REDIS" --version | sed -n 's/.* v=\([^ ]*\).*/\1/p')
REDIS=$(readlink -f "$REDIS")
install -m 0755 "$REDIS" "$CTX/redis/redis-server"
# redis-cli rides along for `redis-cli ping` health checks (the image has no shell).
CLI=$(command -v redis-cli || true)
[[ -n $CLI ]] || die "redis-cli is missing: apt-get install redis-tools (scripts/setup.sh does)"
install -m 0755 "$(readlink -f "$CLI")" "$CTX/redis/redis-cli"
declare -A pkgs=()
pkg_of() { { dpkg -S "$1" 2>/dev/null || true; } | head -n1 | cut -d: -f1; }
pkgs[$(pkg_of "$REDIS")]=1
# Every library ldd resolves, at the path the loader looks for it, dereferenced.
while read -r lib; do
	[[ -n $lib ]] || continue
	real=$(readlink -f "$lib")
	mkdir -p "$CTX/redis$(dirname "$lib")"
	install -m 0644 "$real" "$CTX/redis$lib"
	p=$(pkg_of "$real"); [[ -z $p ]] && p=$(pkg_of "$lib")
	[[ -n $p ]] && pkgs[$p]=1
done < <(ldd "$REDIS" "$CLI" | awk '/=> \//{print $3} /^[ \t]*\/[^ ]+ \(/{print $1}' | sort -u)
chmod 0755 "$CTX/redis/lib64/ld-linux-x86-64.so.2"
for p in "${!pkgs[@]}"; do
	p=${p%%:*}
	if [[ -f /usr/share/doc/$p/copyright ]]; then
		mkdir -p "$CTX/redis/usr/share/doc/$p"
		install -m 0644 "/usr/share/doc/$p/copyright" "$CTX/redis/usr/share/doc/$p/copyright"
	fi
done
# Prove the staged tree runs on its own, as in the image: chroot into it (root only).
if [[ $(id -u) == 0 ]]; then
	chroot "$CTX/redis" /redis-server --version >/dev/null || die "staged redis-server does not run in its own root"
	chroot "$CTX/redis" /redis-cli --version >/dev/null || die "staged redis-cli does not run in its own root"
fi

echo "$redis_version" >"$CTX/redis.version"
log "staged in $CTX: satnode, gateway, grpc_health_probe $PROBE_VERSION, redis-server $redis_version" \
	"with $(find "$CTX/redis" -name '*.so*' | wc -l) shared objects"
