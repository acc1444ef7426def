#!/usr/bin/env bash
# The floor under figure 3 (stream open) on this machine: the same open straight to the benchmark's target, through
# one nginx stream relay and through two chained (the tunnel's shape without its protocol). docs/performance.md,
# finding 17. Needs nginx and libnginx-mod-stream. Options: bench/open-floor.sh --help
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ "${BENCH_SKIP_BUILD:-}" != 1 ]]; then
  mvn -B -q -DskipTests package
fi
jar="$(mktemp -t ptun-benchmarks.XXXXXX.jar)"
trap 'rm -f "$jar"' EXIT
cp benchmarks/target/benchmarks.jar "$jar"
java -cp "$jar" dev.previewtunnel.bench.OpenFloor "$@"
