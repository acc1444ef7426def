#!/usr/bin/env bash
# Start-up of two CLI commands, today's way (java -jar the shaded jar) against the installed Debian package (its
# runtime image and AppCDS archive): docs/performance.md, finding 27. Rounds are interleaved (one run of each
# variant per round), wall time and user+system CPU time (GNU time), medians and ranges printed per variant.
#   bench/cli-startup.sh [ROUNDS]      (default 20; needs the jars built and the package installed)
# desktop-ingress status runs against no ingress (a state directory with no control file: exit 2, "no ingress
# runs"), which is what it costs to ask; env-gateway grant issue signs a grant with a fresh key directory.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-20}
G=env-gateway/target/env-gateway.jar I=desktop-ingress/target/desktop-ingress.jar
command -v /usr/bin/env-gateway >/dev/null || { echo "install the package first (docs/operations.md, Install)" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
java -jar "$G" keys init --dir "$work/keys" >/dev/null
grant=(grant issue --keys "$work/keys" --env bench --session web --target localhost:5173)
status=(status --state-dir "$work/no-ingress")
declare -A cmd=(
  [jar-grant]="java -XX:+ExitOnOutOfMemoryError -jar $G ${grant[*]}"
  [pkg-grant]="/usr/bin/env-gateway ${grant[*]}"
  [jar-status]="java -XX:+ExitOnOutOfMemoryError -jar $I ${status[*]}"
  [pkg-status]="/usr/bin/desktop-ingress ${status[*]}"
)
order=(jar-grant pkg-grant jar-status pkg-status)
for _ in $(seq 1 "$rounds"); do
  for v in "${order[@]}"; do
    # wall seconds, user+system CPU seconds (GNU time)
    /usr/bin/time -f "$v %e %U %S" -a -o "$work/times" ${cmd[$v]} >/dev/null 2>&1 || true
  done
done
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg); $rounds rounds"
stats() { sort -n | awk '{a[NR] = $1 * 1000} END {m = NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2;
  printf "%6d %6d %6d", m, a[1], a[NR]}'; }
printf '%-11s %21s   %21s\n' "" "wall ms: median min max" "CPU ms: median min max"
for v in "${order[@]}"; do
  printf '%-11s %s   %s\n' "$v" "$(awk -v v="$v" '$1 == v {print $2}' "$work/times" | stats)" \
    "$(awk -v v="$v" '$1 == v {print $3 + $4}' "$work/times" | stats)"
done
