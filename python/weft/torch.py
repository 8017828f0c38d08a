"""weft.torch — weft's collectives for PyTorch's data-parallel training.

Two ways in, both zero-copy on CPU tensors (weft reads and writes the
tensor's own memory):

  * a DDP communication hook, on any process group (gloo's, say):
        model = DDP(model)
        model.register_comm_hook(weft.torch.HookState(), weft.torch.allreduce_hook)
    each gradient bucket is averaged by weft's allreduce instead of the
    process group's, on a thread of the hook's own while the backward pass
    goes on (HookState(overlap=False): in the hook itself);

  * a torch.distributed backend named "weft", so that everything DDP and
    torch.distributed do goes through weft:
        weft.torch.init_process_group()          # under `weft run`
    PyTorch 1.13 (Debian 12's python3-torch) lets Python subclass
    ProcessGroup, and Backend.register_backend takes a function that returns
    one, so no C++ extension is needed.  The backend implements allreduce,
    broadcast, reduce, allgather (and _allgather_base), reduce_scatter,
    gather, scatter and barrier; other calls raise, naming themselves, and
    so does every call on a new_group of fewer ranks than the job.  Every
    call completes before it returns (its Work is done at once), so DDP's
    overlap of communication with the backward pass is not there: the hook
    has it.

Under `weft run` nothing else is needed: weft.init() joins the job, and
the rank and size come from it (the launcher exports WEFT_RANK and
WEFT_SIZE), and init_process_group() puts torch's TCP store on a loopback
port rank 0 picks and weft broadcasts; init_process_group("gloo") sets up
gloo the same way, for comparison.
"""
import datetime
import queue
import socket
import threading
import time
import weakref

import numpy as np
import torch
import torch.distributed as dist
from torch._C._distributed_c10d import ProcessGroup, _create_work_from_future

import weft
from weft import _lib

_DTYPES = {torch.int8: "int8", torch.int16: "int16", torch.int32: "int32", torch.int64: "int64",
           torch.uint8: "uint8", torch.float16: "float16", torch.bfloat16: "bfloat16",
           torch.float32: "float32", torch.float64: "float64"}
_OPS = {dist.ReduceOp.SUM: "sum", dist.ReduceOp.PRODUCT: "prod", dist.ReduceOp.MIN: "min",
        dist.ReduceOp.MAX: "max", dist.ReduceOp.BAND: "band", dist.ReduceOp.BOR: "bor",
        dist.ReduceOp.BXOR: "bxor"}


def _tensor(t, what, writable=True):
    """(pointer, element count, weft dtype code) of a tensor weft can use in place."""
    if not isinstance(t, torch.Tensor):
        weft._invalid("%s: want a torch.Tensor, got %s" % (what, type(t).__name__))
    if t.device.type != "cpu":
        weft._invalid("%s: the tensor is on %s; weft reduces CPU memory" % (what, t.device))
    if not t.is_contiguous():
        weft._invalid("%s: the tensor is not contiguous (.contiguous() makes a copy that is)"
                      % what)
    if t.dtype not in _DTYPES:
        weft._invalid("%s: dtype %s is not one weft has (%s)"
                      % (what, t.dtype, ", ".join(str(d) for d in _DTYPES)))
    return t.data_ptr(), t.numel(), _dtype_of(t)


def _dtype_of(t):
    """t's weft datatype code for a refusal, so that the call is recorded as
    the peers make it (a refusal of unknown datatype reads to them as a call
    made otherwise: Mismatch, and the job ends); None where weft has none."""
    if isinstance(t, torch.Tensor) and t.dtype in _DTYPES:
        return _lib.DTYPES.index(_DTYPES[t.dtype])
    return None


def _op_name(op):
    """AVG, PREMUL_SUM, ...: a ReduceOp's repr in 1.13 is only its address."""
    for name, v in dist.ReduceOp.RedOpType.__members__.items():
        if op == v:
            return name
    return repr(op)


def _op(op, what):
    if op not in _OPS:
        weft._raise(6, "%s: reduce op %s is not one weft has (SUM, PRODUCT, MIN, MAX, BAND, "
                       "BOR, BXOR; average by SUM and a division)" % (what, _op_name(op)))
    return _lib.OPS.index(_OPS[op])


def _numel(t):
    return t.numel() if isinstance(t, torch.Tensor) else 0


def allreduce_(comm, t, op="sum", algo=None, params=None):
    """Reduces tensor t over comm's ranks in place (zero-copy); returns t.
    A tensor or argument this rank refuses raises here, and the peers'
    calls fail (PeerError or Mismatch) instead of waiting for it."""
    try:
        p, n, dt = _tensor(t, "allreduce")
        o = weft._op_code(op, "allreduce")
        h = comm._use("allreduce", algo, params)
    except weft.Error as e:
        comm._refuse("allreduce", e, None, op=op, algo=algo, params=params, count=_numel(t),
                     dtype=_dtype_of(t))
    weft._check(_lib.weft_allreduce(_lib.c_void_p(1), p, n, dt, o, h))
    return t


def _identical_or_raise(state, algo, params):
    """DDP keeps one model per rank and never compares them: gradients
    averaged with different last bits on different ranks make the replicas
    drift apart.  So the hook refuses an algorithm whose results are not
    bitwise identical on every rank (weft algorithms: no "=")."""
    p = _lib.weft_algorithm_properties_with(weft.COLLS.index("allreduce"), algo.encode(),
                                            params.encode() if params else None)
    if p >= 0 and p & _lib.ALGO_IDENTICAL:
        return
    state.close()
    if p < 0:
        weft._invalid("HookState: allreduce has no algorithm %r with parameters %r "
                      "(weft.algorithms('allreduce') lists them)" % (algo, params))
    weft._invalid("HookState: allreduce %s combines in an order of each rank's own, so ranks "
                  "get results that differ in the last bits and DDP's replicas would drift "
                  "apart; pick one marked = by `weft algorithms` (or None: AUTO)" % algo)


class HookState:
    """The DDP hook's state: the communicator (the world by default, after
    weft.init()), the algorithm (None: AUTO) and its parameters, and the time
    spent in weft's allreduce (seconds, summed over calls) for benchmarks.

    overlap=True (the default) lets a bucket's allreduce run while the
    backward pass computes the next buckets' gradients, as DDP's own
    allreduce does: the hook queues the bucket and returns; a thread of the
    state's own makes the allreduces, in the order the buckets came, on a
    duplicate of comm that nothing else uses (weft.h's thread rule: one
    thread per communicator at a time), and completes each bucket's future.
    The duplicate is made here, so every rank must make its HookState at
    the same point of the program, as any collective.  close() stops the
    thread and frees the duplicate; weft.finalize() frees it too.
    overlap=False makes each allreduce inside the hook, on comm itself."""

    def __init__(self, comm=None, algo=None, params=None, overlap=True):
        if comm is None:
            weft.init()
            comm = weft.comm_world()
        self.comm, self.algo, self.params, self.overlap = comm, algo, params, overlap
        self.seconds, self.calls = 0.0, 0
        self._queue = self._thread = None
        self._lane = comm.dup() if overlap else None
        if overlap:
            _open_states.add(self)
        if algo and algo != "auto":
            _identical_or_raise(self, algo, params)

    def _enqueue(self, buf, fut):
        if self._thread is None:
            if self._lane is None:
                weft._invalid("allreduce_hook: the HookState was closed")
            self._queue = queue.SimpleQueue()
            self._thread = threading.Thread(target=self._serve, name="weft-ddp-hook",
                                            daemon=True)
            self._thread.start()
        self._queue.put((buf, fut))

    def _serve(self):
        while True:
            item = self._queue.get()
            if item is None:
                return
            buf, fut = item
            t0 = time.perf_counter()
            err = None
            try:
                allreduce_(self._lane, buf, "sum", self.algo, self.params)
                buf.div_(self.comm.size)
            except Exception as e:  # the bucket's future carries it to DDP's wait
                err = e
            self.seconds += time.perf_counter() - t0
            if err is None:
                fut.set_result(buf)
            else:
                fut.set_exception(err)

    def last_algorithm(self):
        """The algorithm that served the last bucket (AUTO's pick)."""
        lane = self._lane if self.overlap else self.comm
        return lane.last_algorithm("allreduce") if lane is not None else None

    def close(self):
        """Stops the hook's thread, after the buckets queued, and frees its
        communicator.  The hook may not be called afterwards."""
        if self._thread is not None:
            self._queue.put(None)
            self._thread.join()
            self._thread = None
        if self._lane is not None and weft.initialized():
            self._lane.free()
        self._lane = None
        _open_states.discard(self)


_open_states = weakref.WeakSet()


def _close_open_states():
    for state in list(_open_states):
        state.close()


weft._before_finalize.append(_close_open_states)


def allreduce_hook(state, bucket):
    """DDP communication hook: averages the bucket's gradients with weft's
    allreduce, in the bucket's own buffer; with state.overlap, on the
    state's thread while the backward pass goes on."""
    buf = bucket.buffer()
    fut = torch.futures.Future()
    state.calls += 1
    if state.overlap:
        state._enqueue(buf, fut)
        return fut
    t0 = time.perf_counter()
    allreduce_(state.comm, buf, "sum", state.algo, state.params)
    buf.div_(state.comm.size)
    state.seconds += time.perf_counter() - t0
    fut.set_result(buf)
    return fut


# ---- the "weft" backend ----

def _Done(result):
    """A Work that finished before it was returned: 1.13's documented way
    for a process group written in Python (a Python subclass of Work is not
    seen by C++ waits, which would block on it forever)."""
    fut = torch.futures.Future()
    fut.set_result(result)
    return _create_work_from_future(fut)


class ProcessGroupWeft(ProcessGroup):
    """A torch.distributed process group whose collectives are weft's."""

    def __init__(self, comm):
        super().__init__(comm.rank, comm.size)
        self.comm = comm

    def getBackendName(self):
        return "weft"

    def _each(self, tensors, what):
        if not isinstance(tensors, (list, tuple)):
            tensors = [tensors]
        return tensors

    def _args(self, coll, t, op=None, root=0, writable=True):
        """_tensor(t), or, where this rank refuses t, the call taken as
        refused (weft.Comm._refuse) so that the peers fail, not wait."""
        try:
            return _tensor(t, coll, writable)
        except weft.Error as e:
            name = _lib.OPS[op] if op is not None else "sum"
            self.comm._refuse(coll, e, None, op=name, root=root, count=_numel(t),
                              dtype=_dtype_of(t))

    def allreduce(self, tensors, opts=None):
        op = _op(opts.reduceOp if opts is not None else dist.ReduceOp.SUM, "allreduce")
        h = self.comm._use("allreduce", None, None)
        for t in self._each(tensors, "allreduce"):
            p, n, dt = self._args("allreduce", t, op)
            weft._check(_lib.weft_allreduce(_lib.c_void_p(1), p, n, dt, op, h))
        return _Done(tensors)

    def allreduce_coalesced(self, tensors, opts=None):
        return self.allreduce(tensors, opts)

    def broadcast(self, tensors, opts=None):
        root = opts.rootRank if opts is not None else 0
        h = self.comm._use("bcast", None, None)
        for t in self._each(tensors, "broadcast"):
            p, n, dt = self._args("bcast", t, root=root)
            weft._check(_lib.weft_bcast(p, n, dt, root, h))
        return _Done(tensors)

    def reduce(self, tensors, opts=None):
        root = opts.rootRank if opts is not None else 0
        op = _op(opts.reduceOp if opts is not None else dist.ReduceOp.SUM, "reduce")
        h = self.comm._use("reduce", None, None)
        for t in self._each(tensors, "reduce"):
            p, n, dt = self._args("reduce", t, op, root)
            send = _lib.c_void_p(1) if self.comm.rank == root else p  # in place at the root
            weft._check(_lib.weft_reduce(send, p, n, dt, op, root, h))
        return _Done(tensors)

    def _allgather_into(self, out, t, what):
        try:
            sp, n, dt = _tensor(t, what, writable=False)
            rp, m, odt = _tensor(out, what)
            if odt != dt or m != n * self.comm.size:
                weft._invalid("%s: the output holds %d %s, want %d x %s" % (
                    what, m, out.dtype, n * self.comm.size, t.dtype))
        except weft.Error as e:
            self.comm._refuse("allgather", e, None, count=_numel(t), dtype=_dtype_of(t))
        h = self.comm._use("allgather", None, None)
        weft._check(_lib.weft_allgather(sp, rp, n, dt, h))

    def allgather(self, output_tensors, input_tensors, opts=None):
        # one list of size tensors per input: gathered flat, then copied out
        for outs, t in zip(output_tensors, input_tensors):
            flat = torch.empty(t.numel() * self.comm.size, dtype=t.dtype)
            self._allgather_into(flat, t.contiguous(), "allgather")
            for r, o in enumerate(outs):
                o.copy_(flat[r * t.numel():(r + 1) * t.numel()].view_as(o))
        return _Done(output_tensors)

    def _allgather_base(self, output, input, opts=None):
        self._allgather_into(output, input, "_allgather_base")
        return _Done([output])

    def _reduce_scatter_into(self, out, flat, op, what):
        try:
            sp, _, dt = _tensor(flat, what, writable=False)
            rp, n, odt = _tensor(out, what)
            if odt != dt or n * self.comm.size != flat.numel():
                weft._invalid("%s: the output holds %d %s, want 1/%d of the input's %d %s"
                              % (what, n, out.dtype, self.comm.size, flat.numel(), flat.dtype))
        except weft.Error as e:
            self.comm._refuse("reduce_scatter", e, None, op=_lib.OPS[op], count=_numel(out),
                              dtype=_dtype_of(out))
        h = self.comm._use("reduce_scatter", None, None)
        weft._check(_lib.weft_reduce_scatter(sp, rp, n, dt, op, h))

    def reduce_scatter(self, output_tensors, input_tensors, opts=None):
        op = _op(opts.reduceOp if opts is not None else dist.ReduceOp.SUM, "reduce_scatter")
        for out, ins in zip(output_tensors, input_tensors):
            self._reduce_scatter_into(out, torch.cat([i.reshape(-1) for i in ins]), op,
                                      "reduce_scatter")
        return _Done(output_tensors)

    def _reduce_scatter_base(self, output, input, opts=None):
        # reduce_scatter_tensor (FSDP's): the input's block r to rank r, in place
        op = _op(opts.reduceOp if opts is not None else dist.ReduceOp.SUM,
                 "reduce_scatter_tensor")
        self._reduce_scatter_into(output, input, op, "reduce_scatter_tensor")
        return _Done([output])

    def _root_blocks(self, lists, k, n, t, what, which):
        """The root's list k of one tensor a rank, each of n elements of t's
        dtype, or refused naming what it wants."""
        blocks = lists[k] if k < len(lists) else []
        if len(blocks) != self.comm.size or any(b.numel() != n or b.dtype != t.dtype
                                                for b in blocks):
            weft._invalid("%s: the root wants %d %s of %d %s, one a rank"
                          % (what, self.comm.size, which, n, t.dtype))
        return blocks

    def gather(self, output_tensors, input_tensors, opts=None):
        # the root's output_tensors is [[one tensor a rank]]; elsewhere []
        root = opts.rootRank if opts is not None else 0
        at_root = self.comm.rank == root
        for k, t in enumerate(self._each(input_tensors, "gather")):
            flat = None
            try:
                sp, n, dt = _tensor(t, "gather", writable=False)
                rp = None
                if at_root:
                    outs = self._root_blocks(output_tensors, k, n, t, "gather", "outputs")
                    flat = torch.empty(n * self.comm.size, dtype=t.dtype)
                    rp = flat.data_ptr()
            except weft.Error as e:
                self.comm._refuse("gather", e, None, root=root, count=_numel(t),
                                  dtype=_dtype_of(t))
            h = self.comm._use("gather", None, None)
            weft._check(_lib.weft_gather(sp, rp, n, dt, root, h))
            if flat is not None:
                for r, o in enumerate(outs):
                    o.copy_(flat[r * n:(r + 1) * n].view_as(o))
        return _Done(output_tensors)

    def scatter(self, output_tensors, input_tensors, opts=None):
        # the root's input_tensors is [[one tensor a rank]]; elsewhere []
        root = opts.rootRank if opts is not None else 0
        at_root = self.comm.rank == root
        for k, out in enumerate(self._each(output_tensors, "scatter")):
            try:
                rp, n, dt = _tensor(out, "scatter")
                sp, flat = None, None
                if at_root:
                    ins = self._root_blocks(input_tensors, k, n, out, "scatter", "inputs")
                    flat = torch.cat([i.reshape(-1) for i in ins]) if n else out.new_empty(0)
                    sp = flat.data_ptr()
            except weft.Error as e:
                self.comm._refuse("scatter", e, None, root=root, count=_numel(out),
                                  dtype=_dtype_of(out))
            h = self.comm._use("scatter", None, None)
            weft._check(_lib.weft_scatter(sp, rp, n, dt, root, h))
        return _Done(output_tensors)

    def barrier(self, opts=None):
        self.comm.barrier()
        return _Done([torch.empty(0)])


def _refuse(name):
    def f(self, *args, **kwargs):
        weft._raise(6, "the weft backend has no %s (it has allreduce, broadcast, reduce, "
                       "allgather, reduce_scatter, gather, scatter and barrier)" % name)
    return f


_NOT_SERVED = ("alltoall", "alltoall_base", "send", "recv", "recv_anysource",
               "allgather_coalesced", "monitored_barrier")
for _name in _NOT_SERVED:
    setattr(ProcessGroupWeft, _name, _refuse(_name))


class _SubgroupRefused(ProcessGroup):
    """What the backend gives torch.distributed.new_group(ranks) of fewer
    ranks than the job: every call raises NotSupported, naming the way
    round.  Raising at creation instead would leave the ranks outside the
    group waiting in new_group's store barrier (30 minutes by default) for
    members that never reach it; torch creates the group on the members
    alone, and weft makes a communicator only with every rank of its
    parent (Comm.split)."""

    def __init__(self, rank, size, job_size):
        super().__init__(rank, size)
        self.job_size = job_size

    def getBackendName(self):
        return "weft"


def _refuse_subgroup(name):
    def f(self, *args, **kwargs):
        weft._raise(6, "the weft backend: %s on a group of %d of the job's %d ranks: the backend "
                       "serves groups of every rank only (weft makes a communicator with every "
                       "rank of its parent, and torch's new_group creates it on the members "
                       "alone); use gloo for the subgroup, with weft.torch.allreduce_hook and "
                       "HookState(comm=weft.comm_world().split(color)) for DDP's gradients"
                    % (name, self.size(), self.job_size))
    return f


for _name in ("allreduce", "allreduce_coalesced", "broadcast", "reduce", "allgather",
              "_allgather_base", "reduce_scatter", "_reduce_scatter_base", "gather", "scatter",
              "barrier") + _NOT_SERVED:
    setattr(_SubgroupRefused, _name, _refuse_subgroup(_name))


def _create(store, rank, size, timeout):
    weft.init()
    comm = weft.comm_world()
    if 0 <= rank < size < comm.size:
        return _SubgroupRefused(rank, size, comm.size)
    if (rank, size) != (comm.rank, comm.size):
        weft._invalid("the weft backend: torch.distributed says rank %d of %d, the weft job "
                      "rank %d of %d (start the program with weft run, and let "
                      "weft.torch.init_process_group set them)" % (rank, size, comm.rank,
                                                                      comm.size))
    return ProcessGroupWeft(comm)


dist.Backend.register_backend("weft", _create)


def _free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def init_process_group(backend="weft", timeout_s=120):
    """torch.distributed.init_process_group for a job started by `weft run`:
    the rank and size are weft's, and the TCP store every backend needs
    (torch's own start-up barrier runs on it, gloo connects through it) is on
    a loopback port that rank 0 chose and weft broadcast.  Returns the weft
    world communicator."""
    weft.init()
    comm = weft.comm_world()
    timeout = datetime.timedelta(seconds=timeout_s)
    port = np.array([_free_port() if comm.rank == 0 else 0], dtype=np.int32)
    comm.bcast(port, root=0)
    dist.init_process_group(backend, init_method="tcp://127.0.0.1:%d" % port[0],
                            rank=comm.rank, world_size=comm.size, timeout=timeout)
    return comm
