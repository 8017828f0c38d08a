"""Ranks that disagree end in a weft.Error on every rank, never in a hang or
a wrong result: `weft run -n P python3 check_mismatch.py CASE` (tests/
CMakeLists.txt runs each case).  The first failing call aborts the job, so
each case is a job of its own; every rank prints 'CASE ok' when it got
what is allowed: Mismatch where it saw the disagreement, PeerError where
another rank saw it first."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import weft  # noqa: E402

weft.init()
comm = weft.comm_world()
case = sys.argv[1]
last = comm.size - 1
try:
    if case == "count":  # the last rank's array is one element longer
        comm.allreduce(np.ones(100 + (comm.rank == last), np.float32))
    elif case == "dtype":  # same bytes, another dtype
        comm.allreduce(np.ones(8, np.int32 if comm.rank == last else np.float32))
    elif case == "root":
        comm.bcast(np.ones(8), root=0 if comm.rank == last else last)
    elif case == "skip":  # the last rank skips the allreduce and goes on to a barrier
        if comm.rank != last:
            comm.allreduce(np.ones(8))
        comm.barrier()
    elif case == "algo":
        comm.allreduce(np.ones(64, np.int64), algo="ring" if comm.rank == last else "twotree")
    elif case == "tensor":  # weft.torch: the last rank's tensor is not contiguous, so it refuses
        import torch
        import weft.torch as wt
        t = torch.ones(16, 16)
        wt.allreduce_(comm, t.t() if comm.rank == last else t)
    elif case == "backend":  # the weft backend: the last rank's output is one element short
        import torch
        import torch.distributed as dist
        import weft.torch as wt
        wt.init_process_group("weft")
        out = torch.zeros(4 * comm.size - (comm.rank == last))
        dist.all_gather_into_tensor(out, torch.ones(4))
    else:
        sys.exit("unknown case " + case)
    print("rank %d: %s: no error" % (comm.rank, case))
    comm.barrier()  # a rank that finished must learn of it now
    print("rank %d: %s: the job went on after a disagreement" % (comm.rank, case))
    sys.exit(1)
except weft.InvalidArgument as e:  # only the rank that refused its own call may see this
    if comm.rank != last or case not in ("tensor", "backend"):
        raise
    os.write(1, ("rank %d: %s -> %s: %s\n%s ok\n" % (comm.rank, case, e.name, e, case)).encode())
except (weft.Mismatch, weft.PeerError) as e:
    if case in ("tensor", "backend") and "refused" not in str(e):  # told why, not at finalize
        os.write(1, ("rank %d: %s: the error does not say the last rank refused: %s\n"
                     % (comm.rank, case, e)).encode())
        sys.exit(1)
    # one write: the ranks share the pipe, and separate prints interleave
    os.write(1, ("rank %d: %s -> %s: %s\n%s ok\n" % (comm.rank, case, e.name, e, case)).encode())
