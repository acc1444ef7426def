#!/usr/bin/env bash
# The performance benchmark (docs/performance.md): builds the jars, then starts a target, env-gateway and
# desktop-ingress (ws:// and wss://) and sshd + ssh -L on loopback and measures every figure for each path.
# Prints a table and writes benchmarks/target/bench-results.json. Options: bench/run.sh --help
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ "${BENCH_SKIP_BUILD:-}" != 1 ]]; then
  mvn -B -q -DskipTests package
fi
# Run a private copy of the runner: a build started meanwhile must not rewrite the jar under it.
jar="$(mktemp -t ptun-benchmarks.XXXXXX.jar)"
trap 'rm -f "$jar"' EXIT
cp benchmarks/target/benchmarks.jar "$jar"
java -Xmx1g -XX:+ExitOnOutOfMemoryError -jar "$jar" --root "$PWD" "$@"
