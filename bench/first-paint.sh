#!/usr/bin/env bash
# Issue 19's figure: time from 'desktop-ingress open ssh://HOST --port N' to the first contentful paint in the
# browser it starts, cold (fresh remote cache and profile) and warm, beside Chromium started straight at the dev
# server; a throwaway sshd on loopback, the benchmark's 300-module Vite app. docs/performance.md, finding 26.
# Needs sshd, chromium, node and the Vite fixture's node_modules. Options: bench/first-paint.sh --help
exec "$(dirname "$0")/run.sh" --first-paint "$@"
