"""Every call of the package at the world's size, exact for integer dtypes
and against a float64 reference for floats, in place and not, for each
dtype, blocking and split-phase.  Every rank can compute every rank's
input (a seeded generator per rank), so each checks the whole result."""
import numpy as np
import pytest

import weft

INTS = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
FLOATS = ["float16", "float32", "float64"]
# a float result may be off by P roundings of partial results of at most
# 51 P in magnitude (the inputs are below 51): eps * 51 P * P, eps the
# type's unit roundoff; products (of 1s and 2s) are exact
EPS = {"float16": 2.0 ** -11, "float32": 2.0 ** -24, "float64": 2.0 ** -53}
COUNTS = [0, 1, 7, 1000, 70001]


def inp(dtype, rank, n, op="sum"):
    """rank's input: small integers, so integer sums and products stay
    exact modulo 2^bits and float16 holds them; floats get a fraction."""
    rng = np.random.default_rng(1000 * rank + n)
    if op == "prod":
        v = rng.integers(1, 3, n)
    elif dtype.startswith("u"):
        v = rng.integers(0, 100, n)
    else:
        v = rng.integers(-50, 50, n)
    a = v.astype(dtype)
    if dtype in FLOATS and op == "sum":
        a = (v + rng.random(n)).astype(dtype)
    return a


def reference(dtype, size, n, op):
    xs = [inp(dtype, r, n, op) for r in range(size)]
    if dtype in INTS:  # wraps modulo 2^bits like weft's integer ops
        acc = xs[0].copy()
        for x in xs[1:]:
            with np.errstate(over="ignore"):
                acc = {"sum": np.add, "prod": np.multiply, "min": np.minimum,
                       "max": np.maximum, "bxor": np.bitwise_xor}[op](acc, x)
        return acc
    acc = xs[0].astype(np.float64)
    for x in xs[1:]:
        acc = {"sum": np.add, "prod": np.multiply, "min": np.minimum,
               "max": np.maximum}[op](acc, x.astype(np.float64))
    return acc


def check(got, want, dtype, what, size):
    if dtype in INTS:
        assert np.array_equal(got, want), "%s: %s != %s" % (what, got[:8], want[:8])
    else:
        bound = EPS[dtype] * 51 * size * size
        np.testing.assert_allclose(got.astype(np.float64), want, rtol=0, atol=bound,
                                   err_msg=what)


@pytest.mark.parametrize("dtype", INTS + FLOATS)
@pytest.mark.parametrize("inplace", [True, False])
def test_allreduce(comm, dtype, inplace):
    for n in COUNTS:
        x = inp(dtype, comm.rank, n)
        if inplace:
            got = comm.allreduce(x)
            assert got is x
        else:
            out = np.zeros_like(x)
            got = comm.allreduce(x, out=out)
            assert got is out
            assert np.array_equal(x, inp(dtype, comm.rank, n)), "the input changed"
        check(got, reference(dtype, comm.size, n, "sum"), dtype, "allreduce n=%d" % n, comm.size)


@pytest.mark.parametrize("op", ["prod", "min", "max", "bxor"])
@pytest.mark.parametrize("dtype", ["int32", "uint8", "float32", "float64"])
def test_allreduce_ops(comm, op, dtype):
    if op == "bxor" and dtype in FLOATS:
        with pytest.raises(weft.InvalidArgument, match="integer"):
            comm.allreduce(inp(dtype, comm.rank, 5), op=op)
        return
    x = inp(dtype, comm.rank, 333, op)
    check(comm.allreduce(x, op=op), reference(dtype, comm.size, 333, op), dtype, op, comm.size)


@pytest.mark.parametrize("algo", ["ring", "recursive_doubling", "rabenseifner", "twotree",
                                  "dissem_adapted", "board"])
def test_allreduce_algo(comm, algo):
    n = 500 if algo == "board" else 5000  # the board carries at most 8232 bytes
    x = inp("int32", comm.rank, n)
    comm.allreduce(x, algo=algo)
    check(x, reference("int32", comm.size, n, "sum"), "int32", algo, comm.size)
    assert comm.last_algorithm("allreduce") == algo
    y = inp("int32", comm.rank, n)  # algo=None: back to the communicator's choice (AUTO)
    comm.allreduce(y)
    assert np.array_equal(x, y)


def test_set_algorithm(comm):
    comm.set_algorithm("allreduce", "ring")
    x = inp("int64", comm.rank, 100)
    comm.allreduce(x)
    assert comm.last_algorithm("allreduce") == "ring"
    comm.allreduce(x, algo="recursive_doubling")
    assert comm.last_algorithm("allreduce") == "recursive_doubling"
    comm.allreduce(x)
    assert comm.last_algorithm("allreduce") == "ring"
    comm.set_algorithm("allreduce", "auto")


def test_dup_takes_choices_not_one_call(comm):
    """A dup or split takes the communicator's set_algorithm choices; an
    algo= of one call (which the C side still holds) is not its default."""
    x = inp("int64", comm.rank, 100)
    comm.allreduce(x, algo="pairwise")
    for child in (comm.dup(), comm.split(0)):
        child.allreduce(x)
        assert child.last_algorithm("allreduce") != "pairwise"
        child.free()
    comm.set_algorithm("allreduce", "ring")
    comm.allreduce(x, algo="pairwise")
    child = comm.dup()
    child.allreduce(x)
    assert child.last_algorithm("allreduce") == "ring"
    child.free()
    comm.set_algorithm("allreduce", "auto")


@pytest.mark.parametrize("dtype", INTS + FLOATS)
def test_bcast(comm, dtype):
    for root in sorted({0, comm.size - 1, comm.size // 2}):
        for n in COUNTS:
            x = inp(dtype, comm.rank, n)
            assert comm.bcast(x, root=root) is x
            assert np.array_equal(x, inp(dtype, root, n)), "bcast root %d n %d" % (root, n)


@pytest.mark.parametrize("dtype", ["int8", "uint64", "float16", "float32", "float64"])
@pytest.mark.parametrize("mode", ["new", "out", "inplace"])
def test_reduce(comm, dtype, mode):
    for root in sorted({0, comm.size - 1}):
        for n in COUNTS:
            x = inp(dtype, comm.rank, n)
            at_root = comm.rank == root
            if mode == "inplace" and at_root:
                got = comm.reduce(x, out=weft.IN_PLACE, root=root)
                assert got is x
            elif mode == "out":
                out = np.zeros_like(x)
                got = comm.reduce(x, out=out, root=root)
                assert got is (out if at_root else None)
            else:
                got = comm.reduce(x, root=root)
            if at_root:
                check(got, reference(dtype, comm.size, n, "sum"), dtype, "reduce n=%d" % n, comm.size)
            else:
                assert got is None


@pytest.mark.parametrize("dtype", ["int16", "uint32", "float16", "float64"])
def test_allgather(comm, dtype):
    for n in [0, 1, 5, 3000]:
        x = inp(dtype, comm.rank, n).reshape(1, n)
        got = comm.allgather(x)
        assert got.shape == (comm.size, 1, n)
        for r in range(comm.size):
            assert np.array_equal(got[r, 0], inp(dtype, r, n))
        out = np.empty(comm.size * n, dtype=dtype)
        assert comm.allgather(x, out=out) is out
        assert np.array_equal(out.reshape(comm.size, 1, n), got)


@pytest.mark.parametrize("dtype", ["int8", "uint64", "float16", "float64"])
def test_gather_scatter(comm, dtype):
    P = comm.size
    for n in [0, 1, 5, 3000]:
        for root in sorted({0, P - 1, P // 2}):
            x = inp(dtype, comm.rank, n).reshape(n, 1)
            got = comm.gather(x, root=root)
            if comm.rank == root:
                assert got.shape == (P, n, 1)
                for r in range(P):
                    assert np.array_equal(got[r, :, 0], inp(dtype, r, n))
                out = np.empty(P * n, dtype=dtype)
                assert comm.gather(x, out=out, root=root) is out
                assert np.array_equal(out.reshape(P, n, 1), got)
            else:
                assert got is None
                assert comm.gather(x, out=np.empty(1), root=root) is None  # not used here
            # the root's blocks in order, one to each rank
            whole = np.concatenate([inp(dtype, r, n) for r in range(P)])
            mine = np.full(n, 7, dtype=dtype)
            assert comm.scatter(mine, whole if comm.rank == root else None, root=root) is mine
            assert np.array_equal(mine, inp(dtype, comm.rank, n))


@pytest.mark.parametrize("dtype", ["int32", "uint8", "float32", "float64"])
def test_reduce_scatter(comm, dtype):
    for block in [0, 1, 9, 2000]:
        n = block * comm.size
        x = inp(dtype, comm.rank, n)
        got = comm.reduce_scatter(x)
        want = reference(dtype, comm.size, n, "sum")[comm.rank * block:(comm.rank + 1) * block]
        check(got, want, dtype, "reduce_scatter block=%d" % block, comm.size)


def test_barrier_and_comms(comm):
    comm.barrier()
    d = comm.dup()
    assert (d.rank, d.size) == (comm.rank, comm.size)
    s = comm.split(comm.rank % 2, key=-comm.rank)
    members = [r for r in range(comm.size) if r % 2 == comm.rank % 2]
    assert s.size == len(members)
    assert s.rank == sorted(members, reverse=True).index(comm.rank)  # ordered by key
    x = np.array([comm.rank], dtype=np.int64)
    s.allreduce(x)
    assert x[0] == sum(members)
    assert comm.split(-1) is None
    d.barrier()
    d.free()
    s.free()
    with pytest.raises(weft.InvalidArgument, match="freed"):
        d.barrier()


@pytest.mark.parametrize("dtype", ["int64", "float32"])
def test_split_phase(comm, dtype):
    n = 20000
    xs = [inp(dtype, comm.rank, n + k) for k in range(3)]
    outs = [np.zeros_like(x) for x in xs]
    reqs = [comm.iallreduce(xs[0], out=outs[0]), comm.iallreduce(xs[1], out=outs[1], algo="ring"),
            comm.iallreduce(xs[2], out=outs[2])]
    while not reqs[2].test():
        pass
    assert reqs[2].test()  # stays done
    for k in (1, 0):  # waited in another order than started
        assert reqs[k].wait() is outs[k]
    for k in range(3):
        check(outs[k], reference(dtype, comm.size, n + k, "sum"), dtype, "iallreduce %d" % k, comm.size)
    b = inp(dtype, comm.rank, 77)
    r = comm.ibcast(b, root=comm.size - 1)
    assert r.wait() is b
    assert np.array_equal(b, inp(dtype, comm.size - 1, 77))
    x = inp(dtype, comm.rank, 500)
    r = comm.ireduce(x, root=0)
    got = r.wait()
    if comm.rank == 0:
        check(got, reference(dtype, comm.size, 500, "sum"), dtype, "ireduce", comm.size)
    else:
        assert got is None


def test_dropped_request(comm):
    """a request dropped unfinished keeps its arrays alive; finalize (or
    here, the next wait on the same communicator) finishes it"""
    import gc
    x = inp("float64", comm.rank, 50000)
    comm.iallreduce(x)  # the request is dropped at once
    gc.collect()
    assert len(weft._orphans) <= 1
    weft._finish_orphans()
    assert not weft._orphans
    check(x, reference("float64", comm.size, 50000, "sum"), "float64", "dropped", comm.size)
