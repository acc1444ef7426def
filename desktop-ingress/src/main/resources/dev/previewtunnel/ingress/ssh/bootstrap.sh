# Run by desktop-ingress open as `ssh HOST sh -s` with this script on stdin, after lines setting PT_VERSION,
# PT_JAVA (--remote-java, may be empty), PT_GATEWAY (--remote-gateway, may be empty) and PT_LINK (the link's id).
# Prints key=value lines and `end=1`; `error=WORDS` when the remote cannot be used. Creates the state and run
# directories owner-only.
umask 077
home=${HOME:-}
if [ -z "$home" ]; then echo "error=HOME is not set"; exit 0; fi
cache="${XDG_CACHE_HOME:-$home/.cache}/preview-tunnel/$PT_VERSION"
state="${XDG_STATE_HOME:-$home/.local/state}/preview-tunnel"
if ! mkdir -p "$state" || ! chmod 700 "$state"; then echo "error=cannot create $state"; exit 0; fi
if [ -n "${XDG_RUNTIME_DIR:-}" ] && [ -d "$XDG_RUNTIME_DIR" ] && [ -w "$XDG_RUNTIME_DIR" ]; then
  run="$XDG_RUNTIME_DIR/preview-tunnel"
else
  run="$state/run"
fi
if ! mkdir -p "$run" || ! chmod 700 "$run"; then echo "error=cannot create $run"; exit 0; fi
# Gateways of this link's earlier attempts: after a network cut sshd may not notice the dead connection for hours,
# and such a gateway would keep its stdin, its socket and its memory until then. SIGTERM drains it and removes its
# socket. ([u]nix keeps grep from matching its own command line.)
if [ -n "$PT_LINK" ] && [ -d /proc/self ]; then
  for f in $(grep -l "[u]nix:.*/gw-$PT_LINK-[0-9]*\.sock" /proc/[0-9]*/cmdline 2>/dev/null); do
    pid=${f#/proc/}
    kill "${pid%/cmdline}" 2>/dev/null
  done
fi
echo "home=$home"
echo "cache=$cache"
echo "state=$state"
echo "run=$run"

# --remote-gateway wins; --remote-java asks for the uploaded jar even where env-gateway is on the PATH
gateway=
if [ -n "$PT_GATEWAY" ]; then
  gateway=$PT_GATEWAY
elif [ -z "$PT_JAVA" ] && command -v env-gateway >/dev/null 2>&1; then
  gateway=$(command -v env-gateway)
fi
echo "gateway=$gateway"

java=
major=
if [ -z "$gateway" ]; then
  if [ -n "$PT_JAVA" ]; then
    case $PT_JAVA in
      */*) java=$PT_JAVA ;;
      *) java=$(command -v "$PT_JAVA" 2>/dev/null || echo "$PT_JAVA") ;;
    esac
  else
    java=$(command -v java 2>/dev/null || true)
  fi
  if [ -n "$java" ] && [ -f "$java" ] && [ -x "$java" ]; then
    spec=$("$java" -XshowSettings:properties -version 2>&1 | sed -n 's/^ *java\.specification\.version = *//p' | head -n 1)
    case $spec in
      1.*) major=${spec#1.}; major=${major%%.*} ;;
      *) major=${spec%%.*} ;;
    esac
  fi
fi
echo "java=$java"
echo "java_major=$major"

hash_tool=
if command -v sha256sum >/dev/null 2>&1; then
  hash_tool=sha256sum
elif command -v shasum >/dev/null 2>&1; then
  hash_tool="shasum -a 256"
elif command -v openssl >/dev/null 2>&1; then
  hash_tool="openssl dgst -sha256 -r"
fi
echo "hash_tool=$hash_tool"
jar_sha256=
if [ -z "$gateway" ] && [ -n "$hash_tool" ] && [ -f "$cache/env-gateway.jar" ]; then
  jar_sha256=$($hash_tool "$cache/env-gateway.jar" | cut -d ' ' -f 1)
fi
echo "jar_sha256=$jar_sha256"
echo "end=1"
