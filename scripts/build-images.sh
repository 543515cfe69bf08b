#!/usr/bin/env bash
# Build the satpage images (targets satnode, gateway, redis of ../Dockerfile) from
# the staged context, tag them satpage.local/<target>:<version>, write each as an
# image archive build/images/<target>.tar (for `ctr images import` on a cluster
# without Docker, or `docker load` elsewhere) and print their sizes.
#
# Builder (IMAGE_BUILDER): docker = `docker build` (needs a running engine),
# pack = scripts/image-pack.py (no Docker), auto (default) = docker when an engine
# answers, else pack. Both build from the same context and the same Dockerfile.
# Usage: scripts/build-images.sh      (after `make build`; `make images` runs both)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
OUT=${IMAGES_DIR:-$ROOT/build/images}
CTX=$OUT/context
REGISTRY=${IMAGE_REGISTRY:-satpage.local}
VERSION=${IMAGE_VERSION:-$(sed -n 's/^__version__ = "\(.*\)"/\1/p' sim/satpage/__init__.py)}
REVISION=$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
TARGETS=(satnode gateway redis)
PY=$ROOT/.venv/bin/python; [[ -x $PY ]] || PY=python3
# The Debian CLI matches the Debian engine; a newer client may sit earlier in PATH.
DOCKER=${DOCKER:-$(command -v /usr/bin/docker || command -v docker || echo docker)}

bash scripts/stage-images.sh "$CTX"
REDIS_VERSION=$(cat "$OUT/context/redis.version")
args=(--build-arg "VERSION=$VERSION" --build-arg "REVISION=$REVISION" --build-arg "REDIS_VERSION=$REDIS_VERSION")

builder=${IMAGE_BUILDER:-auto}
if [[ $builder == auto ]]; then
	if "$DOCKER" info >/dev/null 2>&1; then builder=docker; else builder=pack; fi
fi
printf '%-32s %12s %12s  %s\n' IMAGE SIZE_MB ARCHIVE_MB BUILDER
for t in "${TARGETS[@]}"; do
	ref=$REGISTRY/$t:$VERSION
	case $builder in
	docker)
		# The classic builder: BuildKit would try to pull its Dockerfile frontend.
		DOCKER_BUILDKIT=0 "$DOCKER" build -q --target "$t" -t "$ref" "${args[@]}" -f Dockerfile "$CTX" >/dev/null
		"$DOCKER" save -o "$OUT/$t.tar" "$ref"
		size=$("$DOCKER" image inspect -f '{{.Size}}' "$ref")
		;;
	pack)
		size=$("$PY" scripts/image-pack.py --context "$CTX" --target "$t" --tag "$ref" --out "$OUT/$t.tar" "${args[@]}" | cut -f2)
		;;
	*) echo "build-images: error: IMAGE_BUILDER=$builder (want auto, docker or pack)" >&2; exit 2 ;;
	esac
	awk -v r="$ref" -v s="$size" -v a="$(stat -c %s "$OUT/$t.tar")" -v b="$builder" \
		'BEGIN { printf "%-32s %12.1f %12.1f  %s\n", r, s / 1e6, a / 1e6, b }'
done
