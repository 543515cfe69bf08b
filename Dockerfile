# syntax=docker/dockerfile:1
# The satpage images, built FROM scratch on static binaries that `make images`
# stages into the build context (no base image can be pulled here). Filled in
# by the deploy work (issue 11).
FROM scratch AS satnode
COPY bin/satnode /satnode
USER 65532:65532
ENTRYPOINT ["/satnode"]
