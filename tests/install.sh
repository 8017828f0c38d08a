#!/bin/bash
# `cmake --install` gives a usable library: headers, libweft, the weft tool
# and a relocatable pkg-config file an outside program builds against.
set -eu
build=$1 src=$2
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build" --prefix "$prefix" >/dev/null
export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
command -v pkg-config >/dev/null || { echo "FAIL: pkg-config missing (apt-get install pkg-config)"; exit 1; }
cc "$src/examples/hello_allreduce.c" $(pkg-config --cflags --libs weft) -Wl,-rpath,"$prefix/lib" \
   -o "$prefix/hello"
"$prefix/bin/weft" run -n 3 "$prefix/hello"
echo "1 passed, 0 failed"
