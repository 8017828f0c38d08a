"""weft over an mpi4py communicator, under mpirun: `mpirun -np P python3
check_mpi.py`.  The same checks as the pytest suite's core, on a
communicator made by weft.comm_from_mpi (no weft.init), and beside mpi4py's
own allreduce on the same data."""
import os
import sys

import numpy as np
from mpi4py import MPI

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import weft  # noqa: E402

mc = MPI.COMM_WORLD
comm = weft.comm_from_mpi(mc)
assert (comm.rank, comm.size) == (mc.Get_rank(), mc.Get_size())
fails = 0
for dtype in ("int32", "uint64", "float32", "float64"):
    for n in (0, 1, 1000, 100003):
        x = (np.arange(n) % 97 + comm.rank).astype(dtype)
        want = np.empty_like(x)
        mc.Allreduce(x, want, op=MPI.SUM)
        got = comm.allreduce(x.copy())
        if dtype.startswith("float"):
            ok = np.allclose(got, want, rtol=1e-6)
        else:
            ok = np.array_equal(got, want)
        if not ok:
            print("rank %d: allreduce %s n=%d differs from MPI's" % (comm.rank, dtype, n))
            fails += 1
b = np.full(10, comm.rank, np.int16)
comm.bcast(b, root=comm.size - 1)
fails += not (b == comm.size - 1).all()
g = comm.allgather(np.array([comm.rank], np.int64))
fails += g.ravel().tolist() != list(range(comm.size))
r = comm.iallreduce(np.ones(5000, np.float32))
fails += not (r.wait() == comm.size).all()
d = comm.dup()
d.barrier()
d.free()
comm.free()
total = mc.allreduce(fails)
if comm.rank == 0:
    print("check_mpi: P=%d, %s" % (comm.size, "all ok" if total == 0 else "%d FAILED" % total))
sys.exit(1 if total else 0)
