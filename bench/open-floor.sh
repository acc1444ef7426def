#!/usr/bin/env bash
# The floor under figure 3 (stream open) on this machine: the same open straight to the benchmark's target, through
# one nginx stream relay and through two chained (the tunnel's shape without its protocol). docs/performance.md,
# finding 17. Needs nginx and libnginx-mod-stream. Options: bench/open-floor.sh --help
exec "$(dirname "$0")/run.sh" --open-floor "$@"
