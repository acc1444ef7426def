#!/usr/bin/env bash
# Builds the preview-tunnel app image, its .tar.gz and the Debian package (called by the dist module's pom in the
# package phase; docs/operations.md, "Install"). Needs jlink and jpackage (JDK 17) and, for the .deb, fakeroot and
# dpkg-deb.
#   build-image.sh VERSION TARGET_DIR MODULES REPO_ROOT
# TARGET_DIR/input holds every runtime jar (maven-dependency-plugin). Outputs in TARGET_DIR:
#   image/preview-tunnel/                             the app image (what /opt/preview-tunnel holds once installed)
#   preview-tunnel-VERSION-linux-ARCH.tar.gz          the same image
#   preview-tunnel_DEBVERSION-1_DEBARCH.deb           the package
set -euo pipefail
version=$1 target=$2 modules=$3 root=$4
here=$(cd "$(dirname "$0")" && pwd)
input=$target/input
image=$target/image/preview-tunnel
app=$image/lib/app
# Debian orders 0.1.0~SNAPSHOT before 0.1.0 (a hyphen would start the Debian revision).
deb_version=${version/-/\~}

log() { echo "dist: $*" >&2; }

# Netty's native jars for the other Linux architecture: dead weight in an image for this one.
case $(uname -m) in
  x86_64) rm -f "$input"/*-linux-aarch_64.jar ;;
  aarch64) rm -f "$input"/*-linux-x86_64.jar ;;
esac

log "jlink: $modules"
rm -rf "$target/runtime" "$target/image" "$target/jpackage" "$target"/*.deb "$target"/*.tar.gz
# --generate-cds-archive: the JDK's own classes pre-parsed (lib/server/classes.jsa), used until the app's archive
# exists (tar.gz before generate-cds-archive ran). No --compress: the .deb and .tar.gz compress anyway, and
# classes the archive lacks load faster uncompressed.
jlink --add-modules "$modules" --output "$target/runtime" --strip-debug --no-man-pages --no-header-files \
  --generate-cds-archive >/dev/null

# One class path for every launcher (each launcher's main jar is desktop-ingress's, the main class differs): the
# AppCDS archive matches one class path only. The two programs configure logback in code (cli-support's
# ProgramLogbackConfigurator, no XML to parse: finding 28); the demo names its own logback.xml.
common='-XX:+ExitOnOutOfMemoryError -XX:SharedArchiveFile=$APPDIR/preview-tunnel.jsa -Xlog:cds=off'
logback() { echo "-Dlogback.configurationFile=jar:file:\$APPDIR/$1-$version.jar!/logback.xml"; }
cat > "$target/env-gateway.properties" <<PROPS
main-class=dev.previewtunnel.gateway.cli.GatewayMain
java-options=$common
PROPS
cat > "$target/preview-tunnel-demo.properties" <<PROPS
main-class=dev.previewtunnel.spikes.demo.DemoMain
java-options=$common $(logback security-spikes)
PROPS
log "jpackage: app image"
jpackage --type app-image --dest "$target/jpackage" --name desktop-ingress --app-version "$deb_version" \
  --input "$input" --main-jar "desktop-ingress-$version.jar" --main-class dev.previewtunnel.ingress.cli.IngressMain \
  --runtime-image "$target/runtime" --java-options "$common" \
  --add-launcher "env-gateway=$target/env-gateway.properties" \
  --add-launcher "preview-tunnel-demo=$target/preview-tunnel-demo.properties"
mkdir -p "$target/image"
mv "$target/jpackage/desktop-ingress" "$image"
rm -f "$image"/lib/*.png

# JDK 17's native launcher asks rpm and dpkg which package owns it on every start ('dpkg -S' costs 0.3 s of CPU
# here, finding 27). Each launcher becomes a shell script that runs the runtime's java with exactly what its .cfg
# says (options, class path, main class), resolved at build time; $APPDIR is the real path of lib/app, as the
# native launcher had it (the AppCDS archive matches the class path's absolute paths).
for cfg in "$app"/*.cfg; do
  name=$(basename "$cfg" .cfg)
  main=$(sed -n 's/^app.mainclass=//p' "$cfg")
  cp=$(sed -n 's/^app.classpath=//p' "$cfg" | sed 's/^\$APPDIR/$APPDIR/' | paste -sd: -)
  opts=$(sed -n 's/^java-options=//p' "$cfg" | grep -v '^-Djpackage.app-version=' | sed 's/.*/"&"/' | paste -sd' ' -)
  # The commands that end within a second or so (all but serve, run and open, and the demo) run C1 only with the
  # serial collector: C2 and G1's threads cost them start-up and never pay back (finding 29). The long-running
  # ones run with the memory defaults of dev.previewtunnel.mux.local.JvmDefaults.MEMORY_OPTIONS (issue 21); the
  # gateway keeps tiered compilation, which its throughput needs (findings 18, 19), the desktop side runs C1 only
  # (JvmDefaults.INGRESS_COMPILER_OPTIONS, finding 36). LongRunningJvmFlagsTest keeps these lines and the constants
  # equal. No argument (the usage) counts as long-running, so generate-cds-archive (desktop-ingress without an
  # argument) dumps the archive under the memory flags serve and run share (the compiler does not matter to an
  # archive). $PREVIEW_TUNNEL_JAVA_OPTIONS comes last: its -Xmx wins.
  memory='-XX:+UseSerialGC -Xms16m -Xmx64m -XX:MinHeapFreeRatio=10 -XX:MaxHeapFreeRatio=20 -XX:MaxDirectMemorySize=256m -XX:TrimNativeHeapInterval=1000'
  ingress_compiler='-XX:TieredStopAtLevel=1'
  long=$memory
  if [ "$name" = desktop-ingress ]; then long="$memory $ingress_compiler"; fi
  short='short='
  if [ "$name" != preview-tunnel-demo ]; then
    short='case "${1:-}" in serve|run|open|"") short="'"$long"'" ;; *) short="-XX:TieredStopAtLevel=1 -XX:+UseSerialGC" ;; esac'
  fi
  cat > "$image/bin/$name" <<LAUNCHER
#!/bin/sh
# $name: the preview-tunnel runtime's java with the options and class path of lib/app/$name.cfg.
# Builtins and the system's own readlink only: PATH may hold nothing else (.ci/package-check runs it so).
self=\$(command -p readlink -f "\$0")
APPDIR=\$(cd "\${self%/*}/../lib/app" && pwd -P)
$short
# No globbing: \$PREVIEW_TUNNEL_JAVA_OPTIONS is split at spaces on purpose, but a * in it stays a *.
set -f
exec "\$APPDIR/../runtime/bin/java" \$short $opts \${PREVIEW_TUNNEL_JAVA_OPTIONS:-} -cp "$cp" $main "\$@"
LAUNCHER
  chmod 0755 "$image/bin/$name"
done

# Not on the class path (the .cfg files are written): the gateway jar 'desktop-ingress open' uploads to a host
# (GatewayJar looks beside the desktop-ingress jar), and the script that builds the AppCDS archive.
cp "$root/env-gateway/target/env-gateway.jar" "$app/env-gateway.jar"
install -m 0755 "$here/generate-cds-archive" "$image/lib/generate-cds-archive"

# Completion scripts, from the programs themselves; the systemd units as docs/systemd has them.
share=$image/lib/share
mkdir -p "$share/bash-completion" "$share/zsh" "$share/systemd/system" "$share/systemd/user"
for p in desktop-ingress env-gateway; do
  "$image/bin/$p" completion bash > "$share/bash-completion/$p"
  "$image/bin/$p" completion zsh > "$share/zsh/_$p"
done
cp "$root/docs/systemd/preview-tunnel-gateway.service" "$share/systemd/system/"
if [ -f "$root/docs/systemd/preview-tunnel-ingress.service" ]; then
  cp "$root/docs/systemd/preview-tunnel-ingress.service" "$share/systemd/user/"
fi

# AppCDS class list from training runs of the CLI commands and the demo (which starts a gateway, an ingress and
# a target in one JVM: the server side's classes). The archive itself is dumped where the image ends up (JDK 17
# checks the class path's absolute paths): the package's postinst, or generate-cds-archive after a tar.gz.
log "AppCDS class list: training runs"
train=$(mktemp -d)
trap 'rm -rf "$train"' EXIT
n=0
run() {
  n=$((n + 1))
  HOME=$train XDG_STATE_HOME=$train/state XDG_RUNTIME_DIR=$train/run XDG_CACHE_HOME=$train/cache \
    JAVA_TOOL_OPTIONS="-XX:DumpLoadedClassList=$train/$n.classlist" "$image/bin/$@" >/dev/null 2>"$train/$n.err" \
    || [ "${expect_fail:-}" = 1 ] || { cat "$train/$n.err" >&2; return 1; }
}
mkdir -p "$train/run" && chmod 700 "$train/run"
run env-gateway --help
run env-gateway keys init --dir "$train/keys"
run env-gateway token issue --keys "$train/keys" --env train
run env-gateway grant issue --keys "$train/keys" --env train --session web --target localhost:5173
run desktop-ingress --help
run desktop-ingress --version
expect_fail=1 run desktop-ingress status --state-dir "$train/no-ingress"
run desktop-ingress completion bash
run preview-tunnel-demo
# In run order, each class once (the first run's order wins: the order the archive lays classes out in).
cat $(ls "$train"/*.classlist | sort -V) | awk '!seen[$0]++' > "$app/preview-tunnel.classlist"
log "class list: $(grep -vc '^[#@]' "$app/preview-tunnel.classlist") classes"

arch=$(uname -m)
log "tar.gz"
tar -C "$target/image" -czf "$target/preview-tunnel-$version-linux-$arch.tar.gz" preview-tunnel

log "jpackage: deb"
jpackage --type deb --dest "$target" --app-image "$image" --name preview-tunnel --app-version "$deb_version" \
  --linux-package-name preview-tunnel --install-dir /opt --resource-dir "$here/debian" \
  --description "Remote preview tunnel: desktop-ingress, env-gateway and their runtime" \
  --vendor preview-tunnel --linux-deb-maintainer noreply@preview-tunnel.invalid \
  --linux-app-category net
ls "$target"/*.deb "$target"/*.tar.gz
