#!/bin/bash
# The Python package as users install it: `make install` (here cmake
# --install into a scratch prefix) puts it where the interpreter looks and
# tells it where libweft.so and the tool are; `pip install ./python` (into
# a target directory) finds the library through WEFT_LIBRARY, and says
# what to do without it.  Run from / so the source tree is not on the path.
set -u
build=$1 src=$2 py=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
ok() { echo "ok: $*"; pass=$((pass + 1)); }
bad() { echo "FAIL: $*"; fail=$((fail + 1)); }
unset WEFT_LIBRARY WEFT_BIN PYTHONPATH

cmake --install "$build" --prefix "$tmp/prefix" >/dev/null || bad "cmake --install"
site=$(ls -d "$tmp"/prefix/lib/python3*/*-packages 2>/dev/null | head -1)
[ -f "$site/weft/_paths.py" ] && ok "installed into $site with _paths.py" || bad "no package under $tmp/prefix"
# one write per rank (ranks share the pipe: separate prints interleave)
prog='import os, numpy as np, weft
weft.init(); c = weft.comm_world()
x = np.arange(4, dtype=np.int64); c.allreduce(x)
assert (x == np.arange(4) * c.size).all(), x
os.write(1, ("lib %s\nexplain %s\n" % (weft._lib.path,
             "AUTO picks" in weft.explain("allreduce", 64))).encode())'
out=$(cd / && PYTHONPATH=$site "$tmp/prefix/bin/weft" run -n 2 "$py" -c "$prog" 2>&1)
grep -q "lib $tmp/prefix/lib/libweft.so" <<<"$out" && ok "the installed package loads the installed library" \
    || bad "installed: $out"
[ "$(grep -c 'explain True' <<<"$out")" = 2 ] && ok "weft.explain finds the installed tool" || bad "explain: $out"

if "$py" -m pip --version >/dev/null 2>&1; then
    if "$py" -m pip install -q --no-build-isolation --no-deps --target "$tmp/pip" "$src/python" \
        >"$tmp/pip.log" 2>&1; then
        ok "pip install ./python"
        out=$(cd / && PYTHONPATH=$tmp/pip "$py" -c 'import weft' 2>&1)
        grep -q "libweft.so not found; build it (make build), install it" <<<"$out" \
            && ok "without the library: an ImportError saying what to do" || bad "no library: $out"
        out=$(cd / && PYTHONPATH=$tmp/pip WEFT_LIBRARY=$tmp/prefix/lib/libweft.so.0 \
              "$tmp/prefix/bin/weft" run -n 3 "$py" -c "$prog" 2>&1)
        [ "$(grep -c "lib $tmp/prefix/lib/libweft.so" <<<"$out")" = 3 ] \
            && ok "pip's package with WEFT_LIBRARY at 3 ranks" || bad "pip + WEFT_LIBRARY: $out"
        rm -rf "$src/python/build" "$src/python/weft.egg-info"  # what setuptools leaves
    else
        bad "pip install ./python: $(tail -3 "$tmp/pip.log")"
    fi
else
    bad "pip is missing for $py (apt-get install python3-pip)"
fi
echo "py_install: $pass passed, $fail failed"
[ "$fail" = 0 ]
