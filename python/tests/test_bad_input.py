"""Bad input: a weft.Error subclass with weft's message, never a crash, a
hang or a wrong result.  Every rank makes the same bad call here, so each
is refused before any byte moves and the job goes on, or the call is
refused on some ranks and made alike on the others, which then fail naming
a refusing rank and go on; ranks that disagree end the job, so they have
their own script (check_mismatch.py)."""
import os
import subprocess
import sys

import numpy as np
import pytest

import weft

HERE = os.path.dirname(os.path.abspath(__file__))


def test_error_carries_code_and_message(comm):
    with pytest.raises(weft.InvalidArgument) as e:
        comm.allreduce(np.ones(4, np.int32), op="median")
    assert e.value.code == 1 and e.value.name == "EINVAL"
    assert "median" in e.value.message and "sum" in str(e.value)
    assert isinstance(e.value, weft.Error) and isinstance(e.value, ValueError)


def test_non_contiguous(comm):
    x = np.ones((4, 4), np.float32)
    for bad in (x[:, 1], x.T, x[::2]):
        with pytest.raises(weft.InvalidArgument, match="not C-contiguous"):
            comm.allreduce(bad)
    with pytest.raises(weft.InvalidArgument, match="not C-contiguous"):
        comm.bcast(x[:, 0])
    with pytest.raises(weft.InvalidArgument, match="not C-contiguous"):
        comm.allreduce(np.ones(4, np.float32), out=x[:, 0])


def test_read_only(comm):
    x = np.ones(8, np.int64)
    x.flags.writeable = False
    with pytest.raises(weft.InvalidArgument, match="read-only"):
        comm.allreduce(x)  # in place writes into it
    with pytest.raises(weft.InvalidArgument, match="read-only"):
        comm.bcast(x)
    out = np.zeros(8, np.int64)
    comm.allreduce(x, out=out)  # an input may be read-only
    assert (out == comm.size).all()
    with pytest.raises(weft.InvalidArgument, match="read-only"):
        comm.allreduce(out, out=x)


@pytest.mark.parametrize("dt", [np.complex64, np.bool_, np.float128 if hasattr(np, "float128")
                                else np.complex128, object, "U3"])
def test_dtype_weft_lacks(comm, dt):
    with pytest.raises(weft.InvalidArgument, match="not one weft reduces or moves"):
        comm.allreduce(np.zeros(3, dtype=dt))


def test_byte_order(comm):
    with pytest.raises(weft.InvalidArgument, match="byte order"):
        comm.allreduce(np.zeros(3, dtype=">i4"))


def test_not_arrays(comm):
    with pytest.raises(weft.InvalidArgument, match="NumPy array"):
        comm.allreduce([1, 2, 3])
    with pytest.raises(weft.InvalidArgument, match="NumPy array"):
        comm.allreduce(np.ones(3), out=bytearray(24))


def test_unknown_names(comm):
    with pytest.raises(weft.InvalidArgument, match="no allreduce algorithm named 'nope'"):
        comm.allreduce(np.ones(3), algo="nope")
    with pytest.raises(weft.InvalidArgument, match="chunks"):
        comm.allreduce(np.ones(3), algo="twotree", params="chunks=-4")
    with pytest.raises(weft.InvalidArgument, match="names no algorithm"):
        comm.allreduce(np.ones(3), params="chunks=4")
    with pytest.raises(weft.InvalidArgument, match="unknown collective"):
        weft.algorithms("alltoall")
    with pytest.raises(weft.InvalidArgument, match="no algorithm 'nope'"):
        weft.algorithm_properties("bcast", "nope")
    x = np.arange(5, dtype=np.int32)
    comm.allreduce(x)  # the refusals left the communicator as it was
    assert (x == np.arange(5) * comm.size).all()


def test_op_for_dtype(comm):
    with pytest.raises(weft.InvalidArgument, match="integer types only"):
        comm.allreduce(np.ones(3, np.float64), op="band")


def test_overlapping_output(comm):
    # two views of one buffer that overlap: refused with Python's advice;
    # the very same array as out is in place, as in C
    x = np.ones(8)
    with pytest.raises(weft.InvalidArgument, match="overlaps the input .*leave out out="):
        comm.allreduce(x[:4], out=x[1:5])
    # a reduce's output counts at the root only, so only the root refuses:
    # on a communicator of one rank, every rank is it
    alone = comm.split(color=comm.rank, key=0)
    with pytest.raises(weft.InvalidArgument, match="overlaps the input .*out=weft.IN_PLACE"):
        alone.reduce(x[2:6], out=x[:4], root=0)
    alone.free()
    assert (comm.allreduce(x, out=x) == comm.size).all()


def test_shapes_and_sizes(comm):
    with pytest.raises(weft.InvalidArgument, match="output has 3 elements, the input 4"):
        comm.allreduce(np.ones(4), out=np.ones(3))
    with pytest.raises(weft.InvalidArgument, match="dtype"):
        comm.allreduce(np.ones(4), out=np.ones(4, np.float32))
    with pytest.raises(weft.InvalidArgument, match="want %d" % (2 * comm.size)):
        comm.allgather(np.ones(2), out=np.ones(2 * comm.size + 1))
    if comm.size > 1:
        with pytest.raises(weft.InvalidArgument, match="equal blocks"):
            comm.reduce_scatter(np.ones(comm.size + 1))
    if comm.size > 1:
        # refused on the ranks that are not the root, made at the root: a
        # call refused on some ranks still takes its place (README,
        # "Mismatched calls"), so the root fails too, naming one of them,
        # rather than wait for them; then every rank goes on
        root = 1
        if comm.rank != root:
            with pytest.raises(weft.InvalidArgument, match="root only"):
                comm.reduce(np.ones(2), out=weft.IN_PLACE, root=root)
        else:
            with pytest.raises(weft.PeerError, match="refused reduce"):
                comm.reduce(np.ones(2), root=root)
        comm.barrier()


def test_refused_on_one_rank(comm):
    """An array Python refuses on one rank only: the call still takes its
    place there, so the others fail naming it (they do not wait for a call
    it never makes), and every later call, on every rank, succeeds."""
    if comm.size < 2:
        return
    last = comm.size - 1
    x = np.full(4, comm.rank, np.float32)
    if comm.rank == last:
        x.flags.writeable = False
        with pytest.raises(weft.InvalidArgument, match="read-only"):
            comm.allreduce(x)
    else:
        with pytest.raises(weft.PeerError, match="rank %d refused allreduce" % last):
            comm.allreduce(x)
    for _ in range(4):  # past the board slot of the refused call, twice
        y = np.ones(4, np.float32)
        comm.allreduce(y)
        assert (y == comm.size).all()


def test_gather_scatter_refused(comm):
    """A gather refused on a rank that sends (its input not C-contiguous) and
    a scatter refused at the root (its input of the wrong size or dtype):
    the ranks that wait for the refusing one fail naming it; the ranks that
    only send to the root return; then every rank goes on.  So too after a
    gather refused at its root (its output of the wrong size): the root
    drops the blocks the others sent (README, "Mismatched calls")."""
    P, root = comm.size, comm.size - 1
    if comm.rank == 0 and P > 1:
        with pytest.raises(weft.InvalidArgument, match="gather input: the array is not C-"):
            comm.gather(np.ones((2, 2))[:, 0], root=root)
    elif comm.rank == root and P > 1:
        with pytest.raises(weft.PeerError, match="rank 0 refused gather"):
            comm.gather(np.ones(2), root=root)
    elif P > 1:
        assert comm.gather(np.ones(2), root=root) is None
    if P == 1:
        with pytest.raises(weft.InvalidArgument, match="gather: the output has 3 elements, "
                                                       "want 2"):
            comm.gather(np.ones(2), out=np.ones(3))
        a = np.zeros(2)  # the same start is no in-place form here: refused
        with pytest.raises(weft.InvalidArgument, match="gather: the output overlaps the input "
                                                       "\\(0 bytes apart\\); the call has no"):
            comm.gather(a, out=a)
    if comm.rank == root:
        with pytest.raises(weft.InvalidArgument, match="scatter: the input has 3 elements, "
                                                       "want %d" % (2 * P)):
            comm.scatter(np.ones(2), np.ones(3), root=root)
        with pytest.raises(weft.InvalidArgument, match="dtype"):
            comm.scatter(np.ones(2), np.ones(2 * P, np.float32), root=root)
        whole = np.ones(2 * P)
        with pytest.raises(weft.InvalidArgument, match="scatter: the output overlaps"):
            comm.scatter(whole[:2], whole, root=root)
    else:
        for _ in range(3):
            # from the root, or from the rank it waits for in the tree
            with pytest.raises(weft.PeerError, match="rank %d refused scatter|rank [0-9]+ "
                                                     "abandoned scatter" % root):
                comm.scatter(np.ones(2), root=root)
    x = comm.gather(np.full(2, comm.rank, np.int32), root=root)
    if comm.rank == root:
        assert x[:, 0].tolist() == list(range(P))
    if comm.rank == root:
        with pytest.raises(weft.InvalidArgument, match="gather: the output has 3 elements"):
            comm.gather(np.ones(2, np.int32), out=np.ones(3, np.int32), root=root)
    else:
        try:  # a sender returns, or fails naming the root where it waited for it
            assert comm.gather(np.ones(2, np.int32), root=root) is None
        except weft.PeerError as e:
            assert "rank %d refused gather" % root in str(e)
    for k in range(3):
        x = comm.gather(np.full(2, comm.rank + k, np.int32), root=root)
        if comm.rank == root:
            assert x[:, 1].tolist() == [r + k for r in range(P)]
    with pytest.raises(weft.InvalidArgument, match="scatter output: want a NumPy array"):
        comm.scatter([1, 2], np.ones(2 * P), root=0)


def test_bad_root(comm):
    with pytest.raises(weft.InvalidArgument, match="root %d out of range" % comm.size):
        comm.bcast(np.ones(2), root=comm.size)


def test_integers_beyond_c_int(comm):
    # ctypes would pass 2**32 as 0 and int() 1.5 as 1: a bcast or reduce
    # from the wrong root, a split into the wrong groups, and no error
    x = np.full(3, comm.rank + 1.0)
    for bad, why in ((2**32, "outside C int's range"), (-2**31 - 1, "outside C int's range"),
                     (0.0, "not an integer"), ("0", "not an integer")):
        with pytest.raises(weft.InvalidArgument, match="bcast: root .* " + why):
            comm.bcast(x, root=bad)
        with pytest.raises(weft.InvalidArgument, match="ibcast: root .* " + why):
            comm.ibcast(x, root=bad)
        with pytest.raises(weft.InvalidArgument, match="reduce: root .* " + why):
            comm.reduce(x, root=bad)
    assert (x == comm.rank + 1.0).all()
    with pytest.raises(weft.InvalidArgument, match="split: color 4294967296 is outside"):
        comm.split(color=2**32, key=comm.rank)
    with pytest.raises(weft.InvalidArgument, match="split: key 2.5 is not an integer"):
        comm.split(color=0, key=2.5)
    with pytest.raises(weft.InvalidArgument, match="set_timeout: ms 4294967296 is outside"):
        comm.set_timeout(2**32)
    # NumPy's integers are integers, and the job goes on with the right root
    last = np.int64(comm.size - 1)
    assert (comm.bcast(x, root=last) == comm.size).all()
    sub = comm.split(color=np.int32(0), key=np.int64(-comm.rank))
    assert sub.rank == comm.size - 1 - comm.rank
    sub.free()


def test_algorithms_and_properties():
    names = weft.algorithms("allreduce")
    assert "ring" in names and "recursive_doubling" in names and "auto" not in names
    assert weft.algorithm_properties("allreduce", "butterfly")["needs_idempotent"]
    assert not weft.algorithm_properties("allreduce", "ring")["needs_idempotent"]
    assert weft.algorithms("barrier")


def test_explain(comm):
    text = weft.explain("allreduce", 1 << 20)
    assert "P=%d" % comm.size in text and "AUTO picks" in text
    with pytest.raises(weft.InvalidArgument, match="unknown collective"):
        weft.explain("alltoall", 8)
    with pytest.raises(weft.InvalidArgument, match="--dtype"):
        weft.explain("allreduce", 8, dtype="complex")


def run_alone(code):
    """code in a fresh interpreter that is no rank of this job"""
    env = dict(os.environ)
    for k in list(env):
        if k.startswith("WEFT_") and k not in ("WEFT_LIBRARY", "WEFT_BIN"):
            del env[k]
    env["PYTHONPATH"] = os.path.join(HERE, "..")
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          timeout=60)


def test_before_init_and_after_finalize(comm):
    r = run_alone("import weft\n"
                  "try:\n weft.comm_world()\nexcept weft.NotInitialized as e:\n"
                  " print('refused', e.code, e)\n")
    assert r.returncode == 0 and "refused 7 weft.comm_world: call weft.init() first" in r.stdout, \
        r.stdout + r.stderr
    r = run_alone("import numpy as np, weft\nweft.init()\nc = weft.comm_world()\n"
                  "d = c.dup()\nweft.finalize()\n"
                  "for f in (lambda: c.allreduce(np.ones(2)), d.barrier):\n"
                  " try:\n  f()\n except weft.NotInitialized as e:\n  print('refused', e)\n"
                  "try:\n weft.init()\nexcept weft.NotInitialized as e:\n print('again', e)\n")
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.count("weft was finalized; this communicator is gone") == 2, r.stdout
    assert "again weft.init: weft was finalized" in r.stdout, r.stdout


def test_finalize_with_a_held_request():
    r = run_alone("import numpy as np, weft\nweft.init()\nc = weft.comm_world()\n"
                  "req = c.iallreduce(np.ones(10))\n"
                  "try:\n weft.finalize()\nexcept weft.Busy as e:\n print('busy', e)\n"
                  "print('still', weft.initialized())\n"
                  "print(req.wait()[0])\nweft.finalize()\nprint('finalized', weft.initialized())\n")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "busy" in r.stdout and "still True" in r.stdout and "1.0" in r.stdout, r.stdout
    assert "finalized False" in r.stdout, r.stdout


def test_fork_child(comm):
    """A child of os.fork() is refused weft's calls, and leaving it runs no
    weft_finalize behind its parent's back: the job goes on."""
    pid = os.fork()
    if pid == 0:
        ok = False
        try:
            try:
                comm.allreduce(np.ones(4))
            except weft.InvalidArgument as e:
                ok = "child of fork" in e.message
            weft._finalize_at_exit()  # what sys.exit() in the child runs
            ok = ok and weft.initialized()
        finally:
            os._exit(0 if ok else 1)  # leave without pytest's own exit
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
    x = np.full(3, comm.rank, np.int64)
    comm.allreduce(x)
    assert (x == comm.size * (comm.size - 1) // 2).all()
