"""weft for Python: weft's collectives on NumPy arrays.

    import numpy as np, weft
    weft.init()                      # under `weft run -n P python3 prog.py`
    comm = weft.comm_world()
    x = np.full(1000, comm.rank, dtype=np.float32)
    comm.allreduce(x)                # in place: every rank now holds the sum
    weft.finalize()                  # or let the interpreter's exit do it

Arrays must be NumPy arrays, C-contiguous, of a dtype weft has (int8..uint64,
float16, float32, float64; bfloat16, which NumPy lacks, through weft.torch);
outputs must be writable.  Ranks must pass the same element
count and dtype, as in MPI: the shape itself is not compared (a (2, 3) array
meets a (3, 2) one as six elements).  Everything weft refuses raises a
weft.Error subclass carrying weft's code and message.  See docs/PYTHON.md.
"""
import atexit
import ctypes
import operator
import os
import shutil
import subprocess

import numpy as np

from . import _lib
from ._lib import COLLS, DTYPES, OPS

__all__ = ["init", "finalize", "initialized", "comm_world", "comm_from_mpi", "Comm", "Request",
           "algorithms", "algorithm_properties", "explain", "Error", "InvalidArgument",
           "OutOfMemory", "PeerError", "Timeout", "Busy", "NotSupported", "NotInitialized",
           "Mismatch", "SystemCallError", "InternalError", "Revoked", "IN_PLACE"]

IN_PLACE = object()  # reduce(..., out=weft.IN_PLACE) at the root: the result replaces the input

# ---- errors ----


class Error(Exception):
    """A weft error: .code (weft.h's weft_err_t value), .name ("EINVAL", ...)
    and .message (weft's own message, naming what was wrong)."""

    def __init__(self, code, message):
        super().__init__(message)
        self.code = code
        self.name = _lib.ERRORS[code] if 0 <= code < len(_lib.ERRORS) else str(code)
        self.message = message


class InvalidArgument(Error, ValueError):
    """WEFT_EINVAL: a bad argument (also raised for arrays weft cannot take)."""


class OutOfMemory(Error, MemoryError):
    """WEFT_ENOMEM"""


class PeerError(Error):
    """WEFT_EPEER: a peer process died, gave up or ended the job."""


class Timeout(Error):
    """WEFT_ETIMEDOUT: the communicator's timeout expired (it is now revoked)."""


class Busy(Error):
    """WEFT_EBUSY"""


class NotSupported(Error):
    """WEFT_ENOTSUP: valid, but not something weft implements."""


class NotInitialized(Error):
    """WEFT_ENOTINIT: weft.init() was not called, or weft.finalize() was."""


class Mismatch(Error):
    """WEFT_EMISMATCH: the ranks disagree on a collective's arguments."""


class SystemCallError(Error):
    """WEFT_ESYS: an operating-system call failed."""


class InternalError(Error):
    """WEFT_EINTERNAL: a bug in weft."""


class Revoked(Error):
    """WEFT_EREVOKED: the communicator was revoked."""


_BY_CODE = {1: InvalidArgument, 2: OutOfMemory, 3: PeerError, 4: Timeout, 5: Busy,
            6: NotSupported, 7: NotInitialized, 8: Mismatch, 9: SystemCallError,
            10: InternalError, 11: Revoked}


def _raise(code, message=None):
    if message is None:
        message = (_lib.weft_last_error() or b"").decode(errors="replace")
        if not message:
            message = _lib.weft_strerror(code).decode()
    raise _BY_CODE.get(code, Error)(code, message)


def _check(rc):
    if rc:
        _raise(rc)


def _invalid(msg):
    raise InvalidArgument(1, msg)


# ---- the job ----

_state = {"init": False, "finalized": False, "world": None, "gen": 0}
# called first by finalize(): weft.torch stops its hook threads there, so
# that no other thread is inside weft when the job is left
_before_finalize = []


def init():
    """Joins the job `weft run` started (a job of one rank without it).
    Calling it again does nothing; after finalize() it raises."""
    if _state["init"]:
        return
    if _state["finalized"]:
        _raise(7, "weft.init: weft was finalized in this process; it cannot start again")
    _check(_lib.weft_init(None, None))
    _state["init"] = True
    _state["pid"] = os.getpid()
    _state["gen"] += 1
    atexit.register(_finalize_at_exit)


def initialized():
    return bool(_lib.weft_initialized())


def finalize():
    """Leaves the job (a barrier with the other ranks).  The interpreter's
    exit calls it for a program that does not.  Requests dropped unfinished
    are finished first; one still held and unfinished makes it raise Busy
    (weft stays initialised: wait for it, then call again)."""
    if not _state["init"]:
        return
    for f in _before_finalize:
        f()
    _finish_orphans()
    _check(_lib.weft_finalize())
    _state["init"] = False
    _state["finalized"] = True
    _state["world"] = None


def _finalize_at_exit():
    # a child of os.fork() leaving by sys.exit() runs this hook too; the
    # job is its parent's to leave (weft refuses the child's calls anyway)
    if os.getpid() != _state.get("pid"):
        return
    try:
        finalize()
    except Error:
        pass  # a failed job's finalize reports what the calls already raised


def comm_world():
    """The communicator of every rank of the job."""
    if not _state["init"]:
        _raise(7, "weft.comm_world: call weft.init() first")
    if _state["world"] is None:
        _state["world"] = Comm(_lib.weft_comm_world(), owned=False)
    return _state["world"]


def comm_from_mpi(mpi_comm):
    """A weft communicator over an mpi4py communicator (under mpirun): the
    same ranks, messages through MPI, or shared memory where the ranks share
    a node.  Needs libweft built with MPI and mpi4py; weft.init() is not
    needed.  Free it (comm.free()) before MPI_Finalize."""
    if _lib.weft_comm_from_mpi is None:
        _raise(6, "weft.comm_from_mpi: this libweft.so was built without MPI (%s)" % _lib.path)
    from mpi4py import MPI
    handle = MPI._handleof(mpi_comm)
    # MPI_Comm is a pointer in Open MPI, an int in MPICH
    htype = ctypes.c_void_p if MPI._sizeof(MPI.Comm) == ctypes.sizeof(ctypes.c_void_p) \
        else ctypes.c_int
    f = _lib.weft_comm_from_mpi
    f.restype = ctypes.c_int
    f.argtypes = [htype, ctypes.POINTER(_lib.comm_t)]
    out = _lib.comm_t()
    _check(f(handle, ctypes.byref(out)))
    return Comm(out, owned=True, job=False)


# ---- arrays ----

def _dtype_code(arr, what):
    dt = arr.dtype
    if not dt.isnative:
        _invalid("%s: dtype %s is not in the machine's byte order" % (what, dt))
    name = dt.name
    if name not in DTYPES:
        _invalid("%s: dtype %s is not one weft reduces or moves (weft has %s)"
                 % (what, name, ", ".join(DTYPES)))
    return DTYPES.index(name)


def _array(arr, what, writable):
    if not isinstance(arr, np.ndarray):
        _invalid("%s: want a NumPy array, got %s" % (what, type(arr).__name__))
    if not arr.flags.c_contiguous:
        _invalid("%s: the array is not C-contiguous (np.ascontiguousarray makes a copy that is)"
                 % what)
    if writable and not arr.flags.writeable:
        _invalid("%s: the array is read-only, and weft writes the result into it" % what)
    return arr.ctypes.data, _dtype_code(arr, what)


def _cint(v, what, name):
    """v as a C int argument.  ctypes keeps an int's low 32 bits without a
    word (root=2**32 reached C as root 0, a broadcast from the wrong rank)
    and int() cuts a float (root=1.5 was root 1): both are refused here."""
    try:
        i = operator.index(v)
    except TypeError:
        _invalid("%s: %s %r is not an integer" % (what, name, v))
    if not -2**31 <= i < 2**31:
        _invalid("%s: %s %d is outside C int's range" % (what, name, i))
    return i


def _op_code(op, what):
    if isinstance(op, str) and op.lower() in OPS:
        return OPS.index(op.lower())
    _invalid("%s: unknown op %r (weft has %s)" % (what, op, ", ".join(OPS)))


def _same(a, b, what):
    if a.dtype != b.dtype:
        _invalid("%s: the output's dtype %s differs from the input's %s" % (what, b.dtype, a.dtype))


def _apart(a, b, what, in_place):
    # Both C-contiguous: their byte ranges tell.  The very same array is in
    # place (as weft.h's convention has it); any other overlap would read
    # inputs already overwritten.  in_place None: no in-place form (gather,
    # scatter, whose buffers differ in size), so no overlap at all.
    x, y = a.ctypes.data, b.ctypes.data
    if (x != y or in_place is None) and x < y + b.nbytes and y < x + a.nbytes:
        _invalid("%s: the output overlaps the input (%d bytes apart); %s"
                 % (what, abs(y - x), "for the result in the input itself " + in_place
                    if in_place else "the call has no in-place form: pass them apart"))


# Requests dropped while unfinished: weft still reads and writes their
# arrays, so the arrays stay referenced here until the call is done
# (finalize() waits for them).
_orphans = []


def _finish_orphans():
    while _orphans:
        h, keep = _orphans.pop()
        _lib.weft_wait(ctypes.byref(h))  # its error was the dropped request's to see


class Request:
    """A split-phase collective: wait() blocks until it is done and returns
    its result; test() progresses it and says whether it is.  The arrays
    must stay untouched until then.  A request dropped before it is done is
    not lost: its arrays stay alive until weft.finalize() finishes it."""

    def __init__(self, what, keep, result):
        self._h = _lib.req_t()
        self._what = what
        self._keep = keep  # the arrays weft reads and writes: alive until done
        self._result = result
        self._done = False

    def test(self):
        if self._done:
            return True
        done = ctypes.c_int(0)
        rc = _lib.weft_test(ctypes.byref(self._h), ctypes.byref(done))
        if rc:
            self._done = True
            self._keep = None
            _raise(rc)
        if done.value:
            self._done = True
            self._keep = None
        return self._done

    def wait(self):
        if not self._done:
            rc = _lib.weft_wait(ctypes.byref(self._h))
            self._done = True
            self._keep = None
            _check(rc)
        return self._result

    @property
    def done(self):
        return self._done

    def __del__(self):
        if not self._done and self._h.value and _orphans is not None:
            _orphans.append((self._h, self._keep))


class Comm:
    """A weft communicator: .rank, .size and the collectives.

    algo= names an algorithm for that call (`weft.algorithms(coll)`); None
    keeps the communicator's choice (AUTO, or WEFT_<COLL>_ALGO from the
    environment).  params= passes its parameters ("chunks=8").  Every rank
    must make the same choice."""

    def __init__(self, handle, owned, job=True):
        # a communicator of weft's own job dies with weft.finalize(); the C
        # handle is freed then, so every later use must be refused here
        self._gen = _state["gen"] if job else None
        self._h = handle if isinstance(handle, _lib.comm_t) else _lib.comm_t(handle)
        self._owned = owned
        self.rank = _lib.weft_comm_rank(self._h)
        self.size = _lib.weft_comm_size(self._h)
        if self.rank < 0 or self.size < 1:
            _raise(7, "weft: not a live communicator (was weft finalized?)")
        # per collective: the choice set_algorithm made (None: the default),
        # and the one the C side holds now (a call's algo= changes it)
        self._choice = {}
        self._held = {}

    def _live(self, what):
        if self._gen is not None and (not _state["init"] or self._gen != _state["gen"]):
            _raise(7, "%s: weft was finalized; this communicator is gone" % what)
        if not self._h.value:
            _invalid("%s: the communicator was freed" % what)
        return self._h

    @property
    def handle(self):
        """The weft_comm_t, as an integer (for C code called from Python)."""
        return self._h.value

    # -- communicators --
    def _child(self, out):
        """The Comm of a dup or split: the C side copied this one's current
        choices, so the child knows them as held, and takes this one's
        set_algorithm choices as its own; a per-call algo= that this
        communicator still held is then undone at the child's first call
        rather than becoming its default."""
        c = Comm(out, owned=True, job=self._gen is not None)
        c._choice = dict(self._choice)
        c._held = dict(self._held)
        return c

    def dup(self):
        out = _lib.comm_t()
        _check(_lib.weft_comm_dup(self._live("dup"), ctypes.byref(out)))
        return self._child(out)

    def split(self, color, key=0):
        """Ranks with the same color form a new communicator, ordered by key;
        color < 0 gives None."""
        out = _lib.comm_t()
        h = self._live("split")
        try:
            color, key = _cint(color, "split", "color"), _cint(key, "split", "key")
        except InvalidArgument:
            # split is collective: take part as a rank of no color, so that
            # the peers' split ends, then refuse
            _check(_lib.weft_comm_split(h, -1, 0, ctypes.byref(out)))
            raise
        _check(_lib.weft_comm_split(h, color, key, ctypes.byref(out)))
        return self._child(out) if out.value else None

    def free(self):
        if self._owned and self._h.value:
            self._live("free")
            _check(_lib.weft_comm_free(ctypes.byref(self._h)))

    def set_timeout(self, ms):
        _check(_lib.weft_comm_set_timeout(self._live("set_timeout"), _cint(ms, "set_timeout", "ms")))

    def set_algorithm(self, coll, name, params=None):
        """The algorithm of every later call of coll on this communicator
        ("auto" for AUTO)."""
        c = _coll_code(coll)
        self._set(c, name, params)
        self._choice[c] = self._held[c] = (name or "auto", params)

    def last_algorithm(self, coll):
        """The algorithm that served the last call of coll (AUTO's pick)."""
        s = _lib.weft_last_algorithm(self._live("last_algorithm"), _coll_code(coll))
        return s.decode() if s else None

    def _set(self, c, name, params):
        _check(_lib.weft_set_algorithm(self._live("set_algorithm"), c, (name or "auto").encode(),
                                       params.encode() if params else None))

    def _use(self, coll, algo, params):
        """Makes the C side's choice for this call what was asked; returns
        the handle to call with."""
        h = self._live(coll)
        if params and not algo:
            _invalid("%s: params=%r names no algorithm (pass algo= too, or use set_algorithm)"
                     % (coll, params))
        c = COLLS.index(coll)
        want = (algo, params) if algo else self._choice.get(c)
        if want == self._held.get(c):
            return h
        if want is None:  # back to the default the environment gave the communicator
            env = coll.upper()
            self._set(c, os.environ.get("WEFT_%s_ALGO" % env, "auto"),
                      os.environ.get("WEFT_%s_PARAMS" % env) or None)
        else:
            self._set(c, want[0], want[1])
        self._held[c] = want
        return h

    def _refuse(self, coll, err, array, op="sum", root=0, algo=None, params=None, count=None,
                dtype=None):
        """This rank refused its call of coll (err, raised at the end).  The
        C library takes the call as refused too, with no buffers and what
        is known of the rest, so that peers that made it fail (WEFT_EPEER
        naming this rank, or WEFT_EMISMATCH where they made it otherwise)
        instead of waiting for a call this rank never makes, as for a call
        the C library refuses itself (README, "Mismatched calls").  An empty
        array's call is made as it is: there is nothing to move."""
        try:
            h = self._use(coll, algo, params)
        except Error:
            try:
                h = self._live(coll)
            except Error:
                raise err from None  # no communicator to refuse it on
        n = count if count is not None else getattr(array, "size", 0)
        try:
            dt = dtype if dtype is not None else _dtype_code(array, coll)
        except (Error, AttributeError):
            dt = 255  # refused as a datatype weft does not have
        o = OPS.index(op.lower()) if isinstance(op, str) and op.lower() in OPS else 255
        try:
            r = _cint(root, coll, "root")
        except InvalidArgument:
            r = -1
        if coll == "allreduce":
            _lib.weft_allreduce(None, None, n, dt, o, h)
        elif coll == "bcast":
            _lib.weft_bcast(None, n, dt, r, h)
        elif coll == "reduce":
            _lib.weft_reduce(None, None, n, dt, o, r, h)
        elif coll == "allgather":
            _lib.weft_allgather(None, None, n, dt, h)
        elif coll == "gather":
            _lib.weft_gather(None, None, n, dt, r, h)
        elif coll == "scatter":
            _lib.weft_scatter(None, None, n, dt, r, h)
        else:
            _lib.weft_reduce_scatter(None, None, n, dt, o, h)
        raise err  # the C call's own error says less than Python's

    # -- collectives --
    def barrier(self):
        _check(_lib.weft_barrier(self._live("barrier")))

    def _reduction_args(self, what, array, out, op):
        sp, dt = _array(array, what + " input", writable=out is None)
        if out is None:
            return _lib.c_void_p(1), sp, array, dt  # WEFT_IN_PLACE
        rp, _ = _array(out, what + " output", writable=True)
        _same(array, out, what)
        if out.size != array.size:
            _invalid("%s: the output has %d elements, the input %d" % (what, out.size, array.size))
        _apart(array, out, what, "leave out out=")
        return sp, rp, out, dt

    def _allreduce_call(self, what, array, out, op, algo, params):
        """An allreduce's arguments as C takes them, and the handle."""
        try:
            sp, rp, res, dt = self._reduction_args(what, array, out, op)
            return sp, rp, res, dt, _op_code(op, what), self._use("allreduce", algo, params)
        except InvalidArgument as e:
            self._refuse("allreduce", e, array, op=op, algo=algo, params=params)

    def allreduce(self, array, out=None, op="sum", algo=None, params=None):
        """Reduces array over the ranks: into array itself (in place) or
        into out.  Returns the array holding the result."""
        sp, rp, res, dt, o, h = self._allreduce_call("allreduce", array, out, op, algo, params)
        _check(_lib.weft_allreduce(sp, rp, array.size, dt, o, h))
        return res

    def iallreduce(self, array, out=None, op="sum", algo=None, params=None):
        sp, rp, res, dt, o, h = self._allreduce_call("iallreduce", array, out, op, algo, params)
        r = Request("iallreduce", (array, out), res)
        _check(_lib.weft_iallreduce(sp, rp, array.size, dt, o, h, ctypes.byref(r._h)))
        return r

    def bcast(self, array, root=0, algo=None, params=None):
        """The root's array to every rank's array (in place)."""
        try:
            p, dt = _array(array, "bcast", writable=True)
            root = _cint(root, "bcast", "root")
            h = self._use("bcast", algo, params)
        except InvalidArgument as e:
            self._refuse("bcast", e, array, root=root, algo=algo, params=params)
        _check(_lib.weft_bcast(p, array.size, dt, root, h))
        return array

    def ibcast(self, array, root=0, algo=None, params=None):
        try:
            p, dt = _array(array, "ibcast", writable=True)
            root = _cint(root, "ibcast", "root")
            h = self._use("bcast", algo, params)
        except InvalidArgument as e:
            self._refuse("bcast", e, array, root=root, algo=algo, params=params)
        r = Request("ibcast", (array,), array)
        _check(_lib.weft_ibcast(p, array.size, dt, root, h, ctypes.byref(r._h)))
        return r

    def _reduce_args(self, what, array, out, root):
        root = _cint(root, what, "root")
        at_root = self.rank == root
        if out is IN_PLACE:
            if not at_root:
                _invalid("%s: out=weft.IN_PLACE is for the root only" % what)
            p, dt = _array(array, what + " input", writable=True)
            return _lib.c_void_p(1), p, array, dt, root
        sp, dt = _array(array, what + " input", writable=False)
        if not at_root:
            return sp, None, None, dt, root
        if out is None:
            out = np.empty_like(array)
        rp, _ = _array(out, what + " output", writable=True)
        _same(array, out, what)
        if out.size != array.size:
            _invalid("%s: the output has %d elements, the input %d" % (what, out.size, array.size))
        _apart(array, out, what, "pass out=weft.IN_PLACE")
        return sp, rp, out, dt, root

    def _reduce_call(self, what, array, out, op, root, algo, params):
        """A reduce's arguments as C takes them, and the handle."""
        try:
            sp, rp, res, dt, r = self._reduce_args(what, array, out, root)
            return sp, rp, res, dt, r, _op_code(op, what), self._use("reduce", algo, params)
        except InvalidArgument as e:
            self._refuse("reduce", e, array, op=op, root=root, algo=algo, params=params)

    def reduce(self, array, out=None, op="sum", root=0, algo=None, params=None):
        """Reduces array over the ranks to the root: into out (a new array
        when None; weft.IN_PLACE: into array).  Returns the result at the
        root, None elsewhere."""
        sp, rp, res, dt, root, o, h = self._reduce_call("reduce", array, out, op, root, algo,
                                                        params)
        _check(_lib.weft_reduce(sp, rp, array.size, dt, o, root, h))
        return res

    def ireduce(self, array, out=None, op="sum", root=0, algo=None, params=None):
        sp, rp, res, dt, root, o, h = self._reduce_call("ireduce", array, out, op, root, algo,
                                                        params)
        r = Request("ireduce", (array, res), res)
        _check(_lib.weft_ireduce(sp, rp, array.size, dt, o, root, h, ctypes.byref(r._h)))
        return r

    def _gathered_out(self, what, array, out):
        """The output of every rank's array in rank order, checked (new when
        None: shape (size,) + array.shape), and its address."""
        if out is None:
            out = np.empty((self.size,) + array.shape, dtype=array.dtype)
        rp, _ = _array(out, what + " output", writable=True)
        _same(array, out, what)
        if out.size != array.size * self.size:
            _invalid("%s: the output has %d elements, want %d (size x the input's %d)"
                     % (what, out.size, array.size * self.size, array.size))
        return out, rp

    def allgather(self, array, out=None, algo=None, params=None):
        """Every rank's array, in rank order: out (new when None) has shape
        (size,) + array.shape."""
        try:
            sp, dt = _array(array, "allgather input", writable=False)
            out, rp = self._gathered_out("allgather", array, out)
            h = self._use("allgather", algo, params)
        except InvalidArgument as e:
            self._refuse("allgather", e, array, algo=algo, params=params)
        _check(_lib.weft_allgather(sp, rp, array.size, dt, h))
        return out

    def gather(self, array, out=None, root=0, algo=None, params=None):
        """Every rank's array, in rank order, to the root: out (new when
        None) has shape (size,) + array.shape there.  Returns it at the
        root, None elsewhere (where out is not used)."""
        try:
            root = _cint(root, "gather", "root")
            sp, dt = _array(array, "gather input", writable=False)
            rp = None
            if self.rank == root:
                out, rp = self._gathered_out("gather", array, out)
                _apart(array, out, "gather", None)
            else:
                out = None
            h = self._use("gather", algo, params)
        except InvalidArgument as e:
            self._refuse("gather", e, array, root=root, algo=algo, params=params)
        _check(_lib.weft_gather(sp, rp, array.size, dt, root, h))
        return out

    def scatter(self, out, array=None, root=0, algo=None, params=None):
        """Block `rank` of the root's array (size equal blocks, flat) into
        every rank's out, as MPI_Scatter: every rank passes the out it
        receives into; the root passes array too, of size x out.size
        elements (elsewhere array is not used).  Returns out."""
        try:
            root = _cint(root, "scatter", "root")
            rp, dt = _array(out, "scatter output", writable=True)
            sp = None
            if self.rank == root:
                sp, _ = _array(array, "scatter input", writable=False)
                _same(array, out, "scatter")
                if array.size != out.size * self.size:
                    _invalid("scatter: the input has %d elements, want %d (size x the output's %d)"
                             % (array.size, out.size * self.size, out.size))
                _apart(array, out, "scatter", None)
            h = self._use("scatter", algo, params)
        except InvalidArgument as e:
            self._refuse("scatter", e, out, root=root, algo=algo, params=params)
        _check(_lib.weft_scatter(sp, rp, out.size, dt, root, h))
        return out

    def reduce_scatter(self, array, out=None, op="sum", algo=None, params=None):
        """Reduces array over the ranks and leaves block `rank` of the result
        (array.size / size elements, flat) at each rank, in out (new when
        None)."""
        try:
            sp, dt = _array(array, "reduce_scatter input", writable=False)
            if array.size % self.size:
                _invalid("reduce_scatter: the input's %d elements do not split into %d equal "
                         "blocks" % (array.size, self.size))
            n = array.size // self.size
            if out is None:
                out = np.empty(n, dtype=array.dtype)
            rp, _ = _array(out, "reduce_scatter output", writable=True)
            _same(array, out, "reduce_scatter")
            if out.size != n:
                _invalid("reduce_scatter: the output has %d elements, want %d" % (out.size, n))
            o = _op_code(op, "reduce_scatter")
            h = self._use("reduce_scatter", algo, params)
        except InvalidArgument as e:
            self._refuse("reduce_scatter", e, array, op=op, algo=algo, params=params,
                         count=getattr(array, "size", 0) // self.size)
        _check(_lib.weft_reduce_scatter(sp, rp, n, dt, o, h))
        return out


def _coll_code(coll):
    if coll in COLLS:
        return COLLS.index(coll)
    _invalid("unknown collective %r (weft has %s)" % (coll, ", ".join(COLLS)))


# ---- algorithms ----

def algorithms(coll="allreduce"):
    """The names of coll's algorithms, in the registry's order."""
    c = _coll_code(coll)
    names, i = [], 0
    while True:
        s = _lib.weft_algorithm_name(c, i)
        if not s:
            return names
        names.append(s.decode())
        i += 1


def algorithm_properties(coll, name):
    """{'needs_commutative', 'needs_idempotent', 'identical'} of an algorithm."""
    p = _lib.weft_algorithm_properties(_coll_code(coll), name.encode())
    if p < 0:
        _invalid("%s has no algorithm %r (weft.algorithms(%r) lists them)" % (coll, name, coll))
    return {"needs_commutative": bool(p & _lib.ALGO_NEEDS_COMMUTATIVE),
            "needs_idempotent": bool(p & _lib.ALGO_NEEDS_IDEMPOTENT),
            "identical": bool(p & _lib.ALGO_IDENTICAL)}


def _weft_tool():
    env = os.environ.get("WEFT_BIN")
    if env:
        return env
    try:
        from . import _paths
        cand = os.path.join(_paths.BINDIR, "weft")
        if os.path.exists(cand):
            return cand
    except ImportError:
        pass
    libdir = os.path.dirname(os.path.abspath(_lib.path))
    for cand in (os.path.join(libdir, "weft"),  # the build tree: beside the library
                 os.path.join(libdir, "..", "bin", "weft")):  # an install prefix
        if os.path.exists(cand):
            return os.path.normpath(cand)
    return shutil.which("weft")


def explain(coll, size, np=None, op="sum", dtype="float32"):
    """What AUTO picks for a call of coll with size bytes per rank at np
    ranks (this job's world size by default), the rule that decided, and
    every candidate with its predicted time or the reason it is excluded:
    the text of `weft explain`, which this runs."""
    _coll_code(coll)
    if np is None:
        np = comm_world().size if _state["init"] else 1
    tool = _weft_tool()
    if not tool:
        _raise(6, "weft.explain: the weft tool was not found (set WEFT_BIN, or make install)")
    r = subprocess.run([tool, "explain", coll, "--np", str(int(np)), "--size", str(int(size)),
                        "--op", str(op), "--dtype", str(dtype)],
                       capture_output=True, text=True, check=False)
    if r.returncode:
        _invalid("weft.explain: " + (r.stderr.strip() or "weft explain exited %d" % r.returncode))
    return r.stdout
