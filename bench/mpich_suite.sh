#!/bin/bash
# MPICH's own test suite (test/mpi from Debian's mpich source package),
# built against Open MPI and run with and without weft's drop-in: a test
# counts against weft when it passes on Open MPI alone and fails (a wrong
# result, an error or a hang) with libweft-mpi.so.  Tests that fail on Open
# MPI alone are listed apart (Open MPI 4.1.4 crashes in MPI_Ialltoallw with
# MPI_IN_PLACE in nonblocking2/3).
#   DIRS     the suite's folders (coll comm threads/coll threads/comm; with
#            FORTRAN=1 also f77/coll f90/coll)
#   FORTRAN  1: build the suite's Fortran tests too (mpif77/mpifort of Open
#            MPI, gfortran), which run through the drop-in's Fortran entry
#            points (the suite's f08 tests do not build against Open MPI 4.1)
#   ALGOS    auto: AUTO only; all: also every allreduce, bcast and reduce
#            algorithm forced in turn (WEFT_<COLL>_ALGO) over the tests of
#            that collective (about 30 minutes more)
#   TIMEOUT  seconds a test (180, MPICH's own default; a test whose testlist
#            line sets a longer timeLimit gets that)
#   SKIP     tests not run (comm_idup_nb comm_idup_isend idup_deadlock idup_nb
#            idup_comm_gen: they hang on Open MPI 4.1.4 alone)
#   SRC      an unpacked mpich source tree to use instead of fetching one
# Needs root and apt-get for the source (`apt-get source mpich`, with a
# deb-src entry added for the fetch and removed after) and MPICH's build
# tools (autotools are not needed: the tarball carries configure).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
lib=${LIB:-$here/build/libweft-mpi.so}
FORTRAN=${FORTRAN:-0}
if [ "$FORTRAN" = 1 ]; then DIRS=${DIRS:-coll comm threads/coll threads/comm f77/coll f90/coll}
else DIRS=${DIRS:-coll comm threads/coll threads/comm}; fi
ALGOS=${ALGOS:-auto}
TIMEOUT=${TIMEOUT:-180}
SKIP=${SKIP:-comm_idup_nb comm_idup_isend idup_deadlock idup_nb idup_comm_gen}
[ -f "$lib" ] || { echo "build weft with MPI first: $lib not found"; exit 1; }
command -v mpicc.openmpi >/dev/null || { echo "need Open MPI: apt-get install libopenmpi-dev openmpi-bin"; exit 1; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
work=${WORK:-$(mktemp -d)}
mkdir -p "$work"
echo "working in $work"

fetch_source() {
    [ "$(id -u)" = 0 ] || { echo "need root to fetch mpich's source (or set SRC)"; exit 1; }
    local list=/etc/apt/sources.list.d/weft-mpich-src.sources
    if ! grep -rqs "deb-src" /etc/apt/sources.list /etc/apt/sources.list.d/; then
        . /etc/os-release
        printf 'Types: deb-src\nURIs: http://deb.debian.org/debian\nSuites: %s\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
            "$VERSION_CODENAME" >"$list"
        trap 'rm -f "$list"' RETURN
        apt-get update -qq >&2
    fi
    (cd "$work" && apt-get source -qq --download-only mpich >/dev/null 2>&1)
    tar -C "$work" -xf "$work"/mpich_*.orig.tar.* --wildcards 'mpich-*/test/mpi'
    ls -d "$work"/mpich-*/ | head -1
}

build_suite() { # $1: the source tree
    local t=$1/test/mpi
    # Open MPI's mpi.h turns the MPI-1 names removed in MPI-3 into static
    # assertions; dtpools still calls two of them (same arguments)
    sed -i 's/MPI_Type_hvector(/MPI_Type_create_hvector(/g; s/MPI_Type_hindexed(/MPI_Type_create_hindexed(/g' \
        "$t"/dtpools/src/*.c
    local fortran=(--disable-fortran)
    # gfortran 10 and later refuse the suite's calls of one routine with
    # buffers of different types without -fallow-argument-mismatch
    [ "$FORTRAN" = 1 ] && fortran=(--enable-fortran=all F77=mpif77.openmpi MPIF77=mpif77.openmpi
        FC=mpifort.openmpi MPIFC=mpifort.openmpi FFLAGS=-fallow-argument-mismatch
        FCFLAGS=-fallow-argument-mismatch)
    (cd "$t" && CC=mpicc.openmpi MPICC=mpicc.openmpi ./configure "${fortran[@]}" --disable-cxx \
        --disable-romio --disable-spawn --disable-ft-tests --enable-strictmpi >"$work/configure.log" 2>&1) ||
        { tail -20 "$work/configure.log"; exit 1; }
    make -C "$t/util" -j2 >"$work/build.log" 2>&1
    make -C "$t/dtpools" -j2 >>"$work/build.log" 2>&1
    # -k: the MPI 4.0 tests (persistent collectives, large counts) do not
    # link against Open MPI 4.1; they are reported as not built
    for d in $DIRS; do make -k -C "$t/$d" -j2 >>"$work/build.log" 2>&1 || true; done
}

# one test line of a testlist: NAME NP [arg=..] [env=..] [timeLimit=..]
run_one() { # dir preload(0|1) extra-env name np rest...
    local dir=$1 pre=$2 xenv=$3 name=$4 np=$5 args=() envs=() w out limit=$TIMEOUT
    shift 5
    for w in "$@"; do
        case $w in
            arg=*) args+=("${w#arg=}") ;;
            env=*) envs+=(-x "${w#env=}") ;;
            # the test's own limit where it sets a longer one, as MPICH's runtests does
            # (coll/bcast of 262144 derived elements: 166-177 s here, its limit 420)
            timeLimit=*) [ "${w#timeLimit=}" -gt "$limit" ] && limit=${w#timeLimit=} ;;
        esac
    done
    [ "$pre" = 1 ] && envs+=(-x LD_PRELOAD="$lib")
    [ -n "$xenv" ] && envs+=(-x "$xenv")
    out=$(cd "$dir" && timeout "$limit" mpirun.openmpi -n "$np" --oversubscribe \
        --mca mpi_yield_when_idle 1 "${envs[@]}" "./$name" "${args[@]}" 2>&1 </dev/null) &&
        grep -q "No Errors" <<<"$out"
}

tests_of() { # testlist file, then an optional filter on the name
    grep -v '^\s*#' "$1" | grep -v '^\s*$' | grep -v '@' | { [ -n "${2:-}" ] && grep -E "^\s*($2) " || cat; }
}

# runs one list both ways; prints counts and the failures that are weft's
judge() { # dir testlist xenv label filter
    local dir=$1 list=$2 xenv=$3 label=$4 filter=${5:-} n=0 bad=0 base_bad=0 notbuilt=0
    while read -r name np rest; do
        if [ ! -x "$dir/$name" ]; then notbuilt=$((notbuilt + 1)); continue; fi
        [[ " $SKIP " == *" $name "* ]] && continue
        n=$((n + 1))
        # shellcheck disable=SC2086
        if run_one "$dir" 1 "$xenv" "$name" "$np" $rest; then continue; fi
        # shellcheck disable=SC2086
        if run_one "$dir" 0 "" "$name" "$np" $rest; then
            bad=$((bad + 1)); echo "  FAIL with the drop-in only: $label: $name $np $rest"
        else
            base_bad=$((base_bad + 1)); echo "  fails on Open MPI alone too: $name $np $rest"
        fi
    done < <(tests_of "$list" "$filter")
    echo "$label: $n run, $bad failed with the drop-in only, $base_bad fail without it too, $notbuilt not built"
    failed=$((failed + bad)) passed=$((passed + n - bad - base_bad)) open_mpi_bad=$((open_mpi_bad + base_bad))
}

src=${SRC:-$(fetch_source)}
src=${src%/}
build_suite "$src"
t=$src/test/mpi
passed=0 failed=0 open_mpi_bad=0
for d in $DIRS; do
    judge "$t/$d" "$t/$d/testlist" "" "$d (AUTO)"
    [ "$d" = coll ] && judge "$t/coll" "$t/coll/testlist.dtp" "" "coll, derived types (AUTO)"
done
if [ "$ALGOS" = all ]; then
    # the tests that call each collective (MPICH's names)
    declare -A uses=(
        [allreduce]='allred[0-9]*|allredmany|op[a-z_]*|uoplong|longuser|coll[0-9]+|icallreduce|red_scat_block2?|redscatblk3'
        [bcast]='bcasttest|bcastzerotype|coll[0-9]+|icbcast'
        [reduce]='reduce|red3|red4|op[a-z_]*|coll[0-9]+|icreduce')
    for coll in allreduce bcast reduce; do
        C=$(tr a-z A-Z <<<"$coll")
        for a in $("$here/build/weft" algorithms | awk -v c="$coll" '$1 == c { print $2 }'); do
            judge "$t/coll" "$t/coll/testlist" "WEFT_${C}_ALGO=$a" "coll, $coll $a" "${uses[$coll]}"
        done
    done
fi
echo "($open_mpi_bad tests fail on Open MPI alone and are not counted)"
echo "mpich suite: $passed passed, $failed failed"
[ "$failed" = 0 ]
