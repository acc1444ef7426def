#!/usr/bin/env bash
# The floor under figure 6's idle RSS (issue 21): an idle JVM with the options users run, the same with a Netty
# server bound, mux-protocol alone forwarding ports, Node idle and with a ws server, beside an idle gateway,
# ingress and Dev Tunnels peer, each measured 3 s after its ready line and again at 15 s (settled), rounds
# interleaved. docs/performance.md, findings 34, 39 and 58. Options: bench/memory-floor.sh --help
exec "$(dirname "$0")/run.sh" --memory-floor "$@"
