"""_lib.py — finds libweft.so and declares the C functions the package calls.

ctypes rather than a C extension: the package then needs nothing but
python3 and NumPy (no python3-dev, no compiler matching the interpreter's
ABI), works with any CPython 3 the user runs, and the library it loads is
the very libweft.so C programs link.  ctypes costs about a microsecond per
call, which is nothing against the buffers Python users reduce (a gradient
bucket is megabytes); ctypes.CDLL also releases the GIL during every call,
so a collective never blocks the interpreter's other threads.

Where the library comes from, first match wins:
  1. $WEFT_LIBRARY, a path to libweft.so;
  2. the path `make install` wrote into _paths.py beside this file;
  3. the build tree this package sits in (python/weft -> build/), so the
     tests run from a fresh `make build` without installing;
  4. the dynamic loader's search (ldconfig, LD_LIBRARY_PATH).
"""
import ctypes
import ctypes.util
import os

_here = os.path.dirname(os.path.abspath(__file__))


def _candidates():
    env = os.environ.get("WEFT_LIBRARY")
    if env:
        yield env
        return
    try:
        from . import _paths  # written by `make install`
        yield os.path.join(_paths.LIBDIR, "libweft.so.0")
    except ImportError:
        pass
    for build in ("build", "build-asan", "build-clang"):
        yield os.path.join(_here, "..", "..", build, "libweft.so.0")
    found = ctypes.util.find_library("weft")
    if found:
        yield found
    yield "libweft.so.0"


def _load():
    tried = []
    for path in _candidates():
        if os.sep in path and not os.path.exists(path):
            tried.append(path + " (absent)")
            continue
        try:
            return ctypes.CDLL(path), path
        except OSError as e:
            tried.append("%s (%s)" % (path, e))
    raise ImportError("weft: libweft.so not found; build it (make build), install it "
                      "(make install) or set WEFT_LIBRARY to its path. Tried: " +
                      "; ".join(tried))


lib, path = _load()

c_int, c_size_t, c_char_p, c_void_p = ctypes.c_int, ctypes.c_size_t, ctypes.c_char_p, ctypes.c_void_p
comm_t = c_void_p
req_t = c_void_p


def _proto(name, res, *args):
    f = getattr(lib, name)
    f.restype = res
    f.argtypes = list(args)
    return f


weft_init = _proto("weft_init", c_int, c_void_p, c_void_p)
weft_finalize = _proto("weft_finalize", c_int)
weft_initialized = _proto("weft_initialized", c_int)
weft_comm_world = _proto("weft_comm_world", comm_t)
weft_comm_rank = _proto("weft_comm_rank", c_int, comm_t)
weft_comm_size = _proto("weft_comm_size", c_int, comm_t)
weft_comm_dup = _proto("weft_comm_dup", c_int, comm_t, ctypes.POINTER(comm_t))
weft_comm_split = _proto("weft_comm_split", c_int, comm_t, c_int, c_int, ctypes.POINTER(comm_t))
weft_comm_free = _proto("weft_comm_free", c_int, ctypes.POINTER(comm_t))
weft_comm_set_timeout = _proto("weft_comm_set_timeout", c_int, comm_t, c_int)
weft_barrier = _proto("weft_barrier", c_int, comm_t)
weft_allreduce = _proto("weft_allreduce", c_int, c_void_p, c_void_p, c_size_t, c_int, c_int,
                        comm_t)
weft_bcast = _proto("weft_bcast", c_int, c_void_p, c_size_t, c_int, c_int, comm_t)
weft_reduce = _proto("weft_reduce", c_int, c_void_p, c_void_p, c_size_t, c_int, c_int, c_int,
                     comm_t)
weft_reduce_scatter = _proto("weft_reduce_scatter", c_int, c_void_p, c_void_p, c_size_t, c_int,
                             c_int, comm_t)
weft_allgather = _proto("weft_allgather", c_int, c_void_p, c_void_p, c_size_t, c_int, comm_t)
weft_gather = _proto("weft_gather", c_int, c_void_p, c_void_p, c_size_t, c_int, c_int, comm_t)
weft_scatter = _proto("weft_scatter", c_int, c_void_p, c_void_p, c_size_t, c_int, c_int, comm_t)
weft_iallreduce = _proto("weft_iallreduce", c_int, c_void_p, c_void_p, c_size_t, c_int, c_int,
                         comm_t, ctypes.POINTER(req_t))
weft_ibcast = _proto("weft_ibcast", c_int, c_void_p, c_size_t, c_int, c_int, comm_t,
                     ctypes.POINTER(req_t))
weft_ireduce = _proto("weft_ireduce", c_int, c_void_p, c_void_p, c_size_t, c_int, c_int, c_int,
                      comm_t, ctypes.POINTER(req_t))
weft_test = _proto("weft_test", c_int, ctypes.POINTER(req_t), ctypes.POINTER(c_int))
weft_wait = _proto("weft_wait", c_int, ctypes.POINTER(req_t))
weft_set_algorithm = _proto("weft_set_algorithm", c_int, comm_t, c_int, c_char_p, c_char_p)
weft_last_algorithm = _proto("weft_last_algorithm", c_char_p, comm_t, c_int)
weft_algorithm_name = _proto("weft_algorithm_name", c_char_p, c_int, c_int)
weft_algorithm_properties = _proto("weft_algorithm_properties", c_int, c_int, c_char_p)
weft_algorithm_properties_with = _proto("weft_algorithm_properties_with", c_int, c_int, c_char_p,
                                        c_char_p)
weft_strerror = _proto("weft_strerror", c_char_p, c_int)
weft_last_error = _proto("weft_last_error", c_char_p)
try:  # present when libweft.so was built with MPI
    weft_comm_from_mpi = getattr(lib, "weft_comm_from_mpi")
except AttributeError:
    weft_comm_from_mpi = None

# weft.h's enums, in their order there
ERRORS = ["OK", "EINVAL", "ENOMEM", "EPEER", "ETIMEDOUT", "EBUSY", "ENOTSUP", "ENOTINIT",
          "EMISMATCH", "ESYS", "EINTERNAL", "EREVOKED"]
DTYPES = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float16", "bfloat16", "float32", "float64"]
OPS = ["sum", "prod", "min", "max", "band", "bor", "bxor", "land", "lor"]
COLLS = ["allreduce", "bcast", "reduce", "reduce_scatter", "allgather", "scatter", "gather",
         "barrier"]
ALGO_NEEDS_COMMUTATIVE, ALGO_NEEDS_IDEMPOTENT, ALGO_IDENTICAL = 0x1, 0x2, 0x4
