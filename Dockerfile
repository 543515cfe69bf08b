# The satpage images, one target per image, each FROM scratch: no base image is
# pulled (none can be, on the machines this project runs on). `make images`
# stages the build context first (scripts/stage-images.sh -> build/images/context):
#   satnode, gateway        static Go binaries (CGO_ENABLED=0, from `make build`)
#   grpc_health_probe       static gRPC health client for checks in shell-less images
#   redis/                  Debian's redis-server with its shared libraries and loader
# then builds each target with the context directory, e.g. by hand:
#   docker build --target satnode -t satpage.local/satnode:0.1.0 -f Dockerfile build/images/context
# Without a Docker engine, scripts/image-pack.py builds the same targets from this
# file into OCI archives (it understands the instructions used here and no others).
# Every image runs as the non-root user 65532 and has no shell.

ARG VERSION=0.1.0
ARG REVISION=unknown
ARG SOURCE=https://github.com/satpage/satpage
# The repository licence (LICENSE at the root); data/ is CC BY 4.0 (data/README.md).
ARG LICENSES=Apache-2.0

# Satellite node daemon: one container per satellite (configuration contract:
# services/README.md). Ports: 7000 gRPC (API, health, reflection), 9100 metrics.
FROM scratch AS satnode
ARG VERSION
ARG REVISION
ARG SOURCE
ARG LICENSES
LABEL org.opencontainers.image.title="satpage-satnode" \
      org.opencontainers.image.description="satpage satellite node: page tables, page frames in Redis, ISL relay" \
      org.opencontainers.image.source="$SOURCE" \
      org.opencontainers.image.version="$VERSION" \
      org.opencontainers.image.revision="$REVISION" \
      org.opencontainers.image.licenses="$LICENSES"
COPY satnode grpc_health_probe /
USER 65532:65532
EXPOSE 7000 9100
ENTRYPOINT ["/satnode"]

# Ground gateway: routes each client to the satellite serving it.
FROM scratch AS gateway
ARG VERSION
ARG REVISION
ARG SOURCE
ARG LICENSES
LABEL org.opencontainers.image.title="satpage-gateway" \
      org.opencontainers.image.description="satpage ground gateway: routes clients to their serving satellite" \
      org.opencontainers.image.source="$SOURCE" \
      org.opencontainers.image.version="$VERSION" \
      org.opencontainers.image.revision="$REVISION" \
      org.opencontainers.image.licenses="$LICENSES"
COPY gateway grpc_health_probe /
USER 65532:65532
EXPOSE 7000 9100
ENTRYPOINT ["/gateway"]

# One satellite's page frames: Debian's redis-server (BSD-3-Clause; the Debian
# copyright files of it and of every library ride along in /usr/share/doc).
# In-memory only: no RDB snapshots, no AOF, so a read-only root file system and
# an empty /data (emptyDir or tmpfs) are enough.
FROM scratch AS redis
ARG VERSION
ARG REVISION
ARG SOURCE
ARG REDIS_VERSION=unknown
LABEL org.opencontainers.image.title="satpage-redis" \
      org.opencontainers.image.description="Debian redis-server $REDIS_VERSION for one satellite's page frames" \
      org.opencontainers.image.source="$SOURCE" \
      org.opencontainers.image.version="$VERSION" \
      org.opencontainers.image.revision="$REVISION" \
      org.opencontainers.image.licenses="BSD-3-Clause"
# Root-owned files: the redis user can read and run them, not change them.
COPY redis/ /
USER 65532:65532
EXPOSE 6379
WORKDIR /data
ENTRYPOINT ["/redis-server"]
CMD ["--port", "6379", "--save", "", "--appendonly", "no", "--dir", "/data", "--protected-mode", "no"]
