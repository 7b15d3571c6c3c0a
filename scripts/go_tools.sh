#!/usr/bin/env bash
# Build the pinned load generators go-tpc v1.0.12 and go-ycsb v1.0.3 into $LAB/bin (lab.md §6).
#
#   scripts/go_tools.sh          build what is missing or stale; print the binaries' paths
#
# Each tool is a Go tool dependency of its own small module under scripts/go/<tool>/ (go.mod and go.sum
# committed), so the two tools' dependency graphs are never unified: go-ycsb needs an old thrift
# through a `replace` that Go ignores in a dependency's go.mod. The module proxy refuses `@latest`
# and `@v/list` for both, so they cannot be `go install`ed. A stamp beside each binary holds the hash
# of its go.mod and go.sum: a warm machine skips the build (cold: ~1 min go-tpc, ~2.5 min go-ycsb).
# Without Go the script says so and exits 0: the tests that need the tools skip with that reason.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"

LAB=${PERFKIT_LAB:-/var/lib/perfkit-lab}
BIN=$LAB/bin

say() { printf '[go-tools] %s\n' "$*"; }

if ! command -v go >/dev/null 2>&1; then
    say "no Go toolchain on PATH: go-tpc and go-ycsb not built (their tests will skip)"
    exit 0
fi
mkdir -p "$BIN"

build() { # build NAME PACKAGE [go build flags...]
    local name=$1 pkg=$2 stamp want t0=$SECONDS
    shift 2
    stamp=$BIN/.$name.stamp
    want=$(cat "go/$name/go.mod" "go/$name/go.sum" | sha256sum | cut -d' ' -f1)
    if [[ -x $BIN/$name && -f $stamp && $(cat "$stamp") == "$want" ]]; then
        say "$name: up to date ($BIN/$name)"
        return
    fi
    say "$name: building $pkg ($(go version | cut -d' ' -f3))"
    local attempt
    for attempt in 1 2 3; do # the module download is the part that fails now and then
        (cd "go/$name" && go build -mod=readonly -trimpath "$@" -o "$BIN/$name.tmp" "$pkg") && break
        ((attempt < 3)) || {
            say "FAILED: go build $pkg (3 attempts)"
            exit 1
        }
        say "$name: attempt $attempt failed; retrying in 10 s"
        sleep 10
    done
    mv "$BIN/$name.tmp" "$BIN/$name"
    echo "$want" >"$stamp"
    say "$name: built in $((SECONDS - t0)) s"
}

build go-tpc github.com/pingcap/go-tpc/cmd/go-tpc -ldflags "-X main.version=v1.0.12"
build go-ycsb github.com/pingcap/go-ycsb/cmd/go-ycsb

# health: each binary runs and names its version
"$BIN/go-tpc" version 2>&1 | grep -q 'Release version: v1.0.12' || {
    say "FAILED: $BIN/go-tpc does not report v1.0.12"
    exit 1
}
"$BIN/go-ycsb" --help >/dev/null 2>&1 || {
    say "FAILED: $BIN/go-ycsb --help"
    exit 1
}
say "ready: $BIN/go-tpc $BIN/go-ycsb"
