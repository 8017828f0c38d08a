#!/bin/bash
# What the tests need beyond gcc and cmake.  Installed with apt-get when we
# can (root); otherwise the missing package is named and the tests stop:
# they never skip silently.  Extra needs by argument: `deps.sh clang fuzzer`.
set -u
need=()
for extra in "$@"; do
    case $extra in
        clang) command -v clang >/dev/null || need+=(clang) ;;
        fuzzer) # libFuzzer's runtime ships apart from clang in Debian
            if ! command -v clang >/dev/null; then need+=(clang libclang-rt-14-dev)
            else
                ls "$(clang -print-resource-dir)"/lib/linux/libclang_rt.fuzzer-*.a >/dev/null 2>&1 ||
                    need+=("libclang-rt-$(clang -dumpversion | cut -d. -f1)-dev")
            fi ;;
        *) echo "tests/deps.sh: unknown need '$extra'" >&2; exit 2 ;;
    esac
done
command -v mpicc >/dev/null && command -v mpirun >/dev/null || need+=(openmpi-bin libopenmpi-dev)
command -v gfortran >/dev/null || need+=(gfortran)       # the drop-in under Fortran programs
command -v pkg-config >/dev/null || need+=(pkg-config)
command -v python3 >/dev/null || need+=(python3)       # JSON checks of the tools' output
command -v gnuplot >/dev/null || need+=(gnuplot-nox)   # weft sim --plot
command -v taskset >/dev/null || need+=(util-linux)    # ranks confined to one core
command -v strace >/dev/null || need+=(strace)         # which path a message took
command -v valgrind >/dev/null || need+=(valgrind)     # jobs under memcheck
# the Python package's tests run with Debian's interpreter, which sees the
# python3-* packages (a python3 earlier on PATH, pyenv's say, does not)
py=/usr/bin/python3
[ -x $py ] || need+=(python3)
for mod in numpy:python3-numpy pytest:python3-pytest mpi4py:python3-mpi4py torch:python3-torch \
           pip:python3-pip setuptools:python3-setuptools; do
    [ -x $py ] && $py -c "import ${mod%%:*}" 2>/dev/null || need+=("${mod#*:}")
done
[ ${#need[@]} -eq 0 ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "tests/deps.sh: installing ${need[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q >/dev/null && apt-get install -y -q --no-install-recommends "${need[@]}" >/dev/null \
        && exit 0
fi
echo "tests/deps.sh: the tests need these Debian packages: ${need[*]} (apt-get install ${need[*]})" >&2
exit 1
