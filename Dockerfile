# syntax=docker/dockerfile:1
#
# The sluice image: one static binary on a distroless base, run as an
# unprivileged user. The binary is built by deploy/build.sh, the script CI
# runs too, so the image holds what CI built and tested.
#
#   docker build -t sluice \
#     --build-arg SLUICE_VERSION=v1.2.0 --build-arg SLUICE_COMMIT="$(git rev-parse HEAD)" .
#   docker run -v "$PWD/config:/etc/sluice:ro" -p 8080:8080 sluice
#
# The configuration directory is mounted at /etc/sluice. Its sluice.toml
# must listen on all interfaces ([server] listen = "0.0.0.0:8080"; the
# default, 127.0.0.1:8080, is unreachable from outside the container) and
# should keep its data in the volume ([store] data_dir = "/var/lib/sluice").
# deploy/compose.yaml and the Helm chart in deploy/helm/sluice do both.

FROM --platform=$BUILDPLATFORM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
# The build context has no .git (.dockerignore), so the commit and version
# `sluice version` prints come from these, when given.
ARG SLUICE_VERSION=""
ARG SLUICE_COMMIT=""
ARG TARGETOS
ARG TARGETARCH
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    GOOS=$TARGETOS GOARCH=$TARGETARCH sh deploy/build.sh /out/sluice
# The data volume's mount point, owned by the unprivileged user, so that a
# fresh named volume starts writable.
RUN mkdir -p /out/data

FROM gcr.io/distroless/static-debian13:nonroot
COPY --from=build /out/sluice /usr/local/bin/sluice
COPY --from=build --chown=65532:65532 /out/data /var/lib/sluice
# distroless's "nonroot" user, by number, so that Kubernetes' runAsNonRoot
# can verify it.
USER 65532:65532
# [store] data_dir: the SQLite request log and state store, the spool.
VOLUME ["/var/lib/sluice"]
# [server] listen (set it to 0.0.0.0:8080 in sluice.toml).
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/sluice"]
CMD ["serve", "--config", "/etc/sluice"]
