"""Random calls, the same sequence on every rank (one seed): collective,
dtype, count, op, root, algorithm, in place or not, blocking or split-phase
with several in flight.  Every result is checked; an algorithm that cannot
serve a call must be refused alike on every rank (weft.InvalidArgument
before any byte moves) and the communicator must go on working."""
import random

import numpy as np

import weft

DTYPES = ["int8", "int32", "uint16", "int64", "float32", "float64"]
CALLS = 1500


def inp(dtype, rank, n, salt):
    v = (np.arange(n) * 7 + rank * 13 + salt) % 23 - 5
    return v.astype(dtype)


def sum_of(dtype, size, n, salt):
    acc = np.zeros(n, dtype=np.float64 if dtype.startswith("float") else dtype)
    for r in range(size):
        with np.errstate(over="ignore"):
            acc = acc + inp(dtype, r, n, salt).astype(acc.dtype)
    return acc


def same(got, want, dtype):
    if dtype.startswith("float"):
        return np.allclose(got.astype(np.float64), want, rtol=1e-6, atol=1e-6)
    return np.array_equal(got, want.astype(dtype))


def test_random_calls(comm):
    rng = random.Random(20261124)  # the same draws on every rank
    algos = {c: weft.algorithms(c) + [None] * 4 for c in
             ("allreduce", "bcast", "reduce", "allgather", "reduce_scatter")}
    pending = []
    refused = bad = 0
    for call in range(CALLS):
        coll = rng.choice(list(algos))
        dtype = rng.choice(DTYPES)
        n = rng.choice([0, 1, 3, 17, 100, 1000, 5000])
        salt = call
        algo = rng.choice(algos[coll])
        root = rng.randrange(comm.size)
        inplace = rng.random() < 0.5
        split = coll == "allreduce" and rng.random() < 0.3
        x = inp(dtype, comm.rank, n * (comm.size if coll == "reduce_scatter" else 1), salt)
        try:
            if coll == "allreduce":
                out = None if inplace else np.zeros_like(x)
                if split:
                    pending.append((comm.iallreduce(x, out=out, algo=algo), dtype, n, salt))
                    if len(pending) > 3 or rng.random() < 0.5:
                        r, dt, m, s = pending.pop(0)
                        bad += not same(r.wait(), sum_of(dt, comm.size, m, s), dt)
                    continue
                got = comm.allreduce(x, out=out, algo=algo)
                bad += not same(got, sum_of(dtype, comm.size, n, salt), dtype)
            elif coll == "bcast":
                comm.bcast(x, root=root, algo=algo)
                bad += not np.array_equal(x, inp(dtype, root, n, salt))
            elif coll == "reduce":
                out = weft.IN_PLACE if inplace and comm.rank == root else None
                got = comm.reduce(x, out=out, root=root, algo=algo)
                if comm.rank == root:
                    bad += not same(got, sum_of(dtype, comm.size, n, salt), dtype)
            elif coll == "allgather":
                got = comm.allgather(x, algo=algo)
                for r in range(comm.size):
                    bad += not np.array_equal(got[r], inp(dtype, r, n, salt))
            else:
                got = comm.reduce_scatter(x, algo=algo)
                want = sum_of(dtype, comm.size, n * comm.size, salt)
                bad += not same(got, want[comm.rank * n:(comm.rank + 1) * n], dtype)
        except weft.InvalidArgument as e:
            # refused before any byte moved, alike everywhere: the next
            # barrier proves every rank took the same path
            assert "algorithm" in str(e) or "serve" in str(e) or "needs" in str(e) or \
                "carries at most" in str(e) or "shared memory" in str(e), str(e)
            refused += 1
    for r, dt, m, s in pending:
        bad += not same(r.wait(), sum_of(dt, comm.size, m, s), dt)
    comm.barrier()
    print("rank %d: %d calls, %d refused alike, %d wrong" % (comm.rank, CALLS, refused, bad))
    assert refused < CALLS // 2, "most calls refused: the draw is broken"
    assert bad == 0, "%d wrong results" % bad
    counts = comm.allgather(np.array([refused], np.int64)).ravel()
    assert (counts == refused).all(), "ranks refused different calls: %s" % counts
