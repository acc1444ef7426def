#!/usr/bin/env bash
# The floor under figure 6's idle RSS (issue 21): an idle JVM with the options users run, the same with a Netty
# server bound, Node idle and with a ws server, beside an idle gateway, ingress and Dev Tunnels peer, each measured
# 3 s after its ready line, rounds interleaved. docs/performance.md, finding 34. Options: bench/memory-floor.sh --help
exec "$(dirname "$0")/run.sh" --memory-floor "$@"
