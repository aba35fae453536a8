#!/bin/sh
# Builds the sluice binary the one way the container image and CI both do:
# static (no cgo: the SQLite driver is pure Go), paths trimmed, symbol and
# debug tables stripped.
#
#   sh deploy/build.sh [OUT]        OUT defaults to ./sluice
#
# The build information records the commit when the source is a git work
# tree (`sluice version` prints it). Where there is none, as in an image
# built from a context without .git, SLUICE_VERSION and SLUICE_COMMIT, when
# set, are linked in instead. GOOS and GOARCH cross-compile as usual.
set -eu

out=${1:-sluice}
case $out in /*) ;; *) out=$PWD/$out ;; esac
cd "$(dirname "$0")/.."

# Go does not stamp a linked git work tree (git worktree add): the commit
# is linked in from git itself then. Only a missing stamp is filled in.
if [ -z "${SLUICE_COMMIT:-}" ] && [ -f .git ]; then
  SLUICE_COMMIT=$(git rev-parse HEAD 2>/dev/null || true)
fi

ldflags="-s -w"
for pair in "linkVersion=${SLUICE_VERSION:-}" "linkCommit=${SLUICE_COMMIT:-}"; do
  value=${pair#*=}
  [ -n "$value" ] || continue
  case $value in
    *[!A-Za-z0-9._+-]*) echo "deploy/build.sh: ${pair%%=*}: '$value' is not a version or commit" >&2; exit 2 ;;
  esac
  ldflags="$ldflags -X main.$pair"
done

# -buildvcs=auto overrides a GOFLAGS=-buildvcs=false of the environment: the
# commit is recorded whenever git and a work tree are there.
CGO_ENABLED=0 exec go build -trimpath -buildvcs=auto -ldflags="$ldflags" -o "$out" ./cmd/sluice
