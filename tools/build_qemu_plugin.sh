#!/usr/bin/env bash
# Build the memory-model plugin (tools/qemu_plugin/elt_cache.c) for the installed QEMU into
# out/cache/qemu-plugin/libelt_cache.so; `codegen bench` runs it (measure/bench_memory.py).
#
# The plugin API header (include/qemu/qemu-plugin.h) ships in no Debian binary package, so it is
# taken from Debian's source package of the installed qemu-system-arm (`apt-get source
# --download-only`, which needs deb-src lines in the apt sources). Idempotent: nothing happens
# when the library is newer than its source. When the header cannot be had, the reason goes to
# out/cache/qemu-plugin/ABSENT, the bench reports it by name, and setup carries on.
set -uo pipefail
cd "$(dirname "$0")/.."

DIR=out/cache/qemu-plugin
SRC=tools/qemu_plugin/elt_cache.c
LIB=$DIR/libelt_cache.so
mkdir -p "$DIR"

absent() {
    echo "$1" > "$DIR/ABSENT"
    echo "setup: memory-model plugin not built: $1"
    exit 0
}

if [ -f "$LIB" ] && [ "$LIB" -nt "$SRC" ] && [ -f "$DIR/qemu-plugin.h" ]; then
    exit 0
fi
command -v qemu-system-arm >/dev/null || absent "qemu-system-arm is not installed"
command -v gcc >/dev/null || absent "gcc is not installed"

if [ ! -f "$DIR/qemu-plugin.h" ]; then
    version=$(dpkg-query -W -f='${source:Version}' qemu-system-arm 2>/dev/null)
    [ -n "$version" ] || absent "dpkg does not know qemu-system-arm's source version"
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    if ! (cd "$tmp" && apt-get source --download-only -qq "qemu=$version" >/dev/null 2>&1); then
        absent "apt-get source qemu=$version failed (no deb-src lines in the apt sources?): the plugin API header include/qemu/qemu-plugin.h is in no binary package"
    fi
    orig=$(ls "$tmp"/qemu_*.orig.tar.* 2>/dev/null | head -n 1)
    [ -n "$orig" ] || absent "the qemu source package has no orig tarball"
    tar -xf "$orig" -C "$tmp" --wildcards '*/include/qemu/qemu-plugin.h' ||
        absent "include/qemu/qemu-plugin.h not found in $(basename "$orig")"
    cp "$(find "$tmp" -name qemu-plugin.h | head -n 1)" "$DIR/qemu-plugin.h"
fi

if ! gcc -O2 -fPIC -shared -Wall -Wextra -Werror -I"$DIR" -o "$LIB.tmp" "$SRC"; then
    absent "gcc could not build $SRC"
fi
mv "$LIB.tmp" "$LIB"
rm -f "$DIR/ABSENT"
echo "setup: memory-model plugin $LIB"
