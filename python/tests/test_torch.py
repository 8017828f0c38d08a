"""weft.torch: the DDP hook and the "weft" backend against gloo.  A model
trained N steps data-parallel must end with the same parameters (to float
tolerance) whether gloo, the weft hook on gloo's process group, or the weft
backend averaged its gradients, on every rank."""
import numpy as np
import pytest

import torch  # a dependency (tests/deps.sh installs python3-torch): never skipped
import torch.distributed as dist  # noqa: E402
import torch.nn as nn  # noqa: E402
from torch.nn.parallel import DistributedDataParallel as DDP  # noqa: E402

import weft  # noqa: E402
import weft.torch as wt  # noqa: E402

STEPS = 6


@pytest.fixture(scope="module")
def groups(comm):
    if not dist.is_initialized():
        wt.init_process_group("gloo")
    return {"gloo": dist.distributed_c10d._get_default_group(),
            "weft": dist.new_group(backend="weft")}


def make_model():
    torch.manual_seed(0)
    return nn.Sequential(nn.Conv2d(1, 4, 3), nn.ReLU(), nn.Flatten(), nn.Linear(4 * 6 * 6, 16),
                         nn.ReLU(), nn.Linear(16, 3))


def train(model, rank, steps=STEPS):
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    g = torch.Generator().manual_seed(1000 + rank)  # each rank its own data
    for _ in range(steps):
        x = torch.randn(8, 1, 8, 8, generator=g)
        y = torch.randint(0, 3, (8,), generator=g)
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
    return loss.item()


def params(model):
    return torch.cat([p.detach().reshape(-1) for p in model.parameters()])


def same_everywhere(comm, t):
    """the tensor is bitwise the same on every rank"""
    mine = t.numpy().view(np.uint8)
    everyone = comm.allgather(mine)
    return all(np.array_equal(everyone[r], mine) for r in range(comm.size))


@pytest.mark.parametrize("overlap", [True, False])
def test_hook_matches_gloo(comm, groups, overlap):
    ref = DDP(make_model(), process_group=groups["gloo"])
    loss_ref = train(ref, comm.rank)
    hooked = DDP(make_model(), process_group=groups["gloo"])
    state = wt.HookState(comm, overlap=overlap)
    hooked.register_comm_hook(state, wt.allreduce_hook)
    loss = train(hooked, comm.rank)
    assert state.calls >= STEPS  # one call per bucket per step
    # the overlapped hook's calls go to its own communicator, on its thread
    assert (state._thread is not None) == overlap
    if overlap:
        assert state._lane.last_algorithm("allreduce") is not None
    state.close()
    torch.testing.assert_close(params(hooked), params(ref), rtol=1e-5, atol=1e-6)
    assert abs(loss - loss_ref) <= 1e-4 * max(1.0, abs(loss_ref))
    assert same_everywhere(comm, params(hooked))
    # and it trained: not the initial parameters
    assert not torch.equal(params(hooked), params(make_model()))


@pytest.mark.parametrize("overlap", [True, False])
def test_hook_refuses_drifting_algorithms(comm, overlap):
    """DDP's replicas must stay bitwise equal: an algorithm whose ranks
    combine in orders of their own is refused, as is an unknown one"""
    with pytest.raises(weft.InvalidArgument, match="drift apart"):
        wt.HookState(comm, algo="bruck", overlap=overlap)
    with pytest.raises(weft.InvalidArgument, match="drift apart"):
        wt.HookState(comm, algo="hier", params="inter=dissem", overlap=overlap)
    with pytest.raises(weft.InvalidArgument, match="no algorithm"):
        wt.HookState(comm, algo="no_such_algorithm", overlap=overlap)
    wt.HookState(comm, algo="hier", params="inter=ring", overlap=overlap).close()


@pytest.mark.parametrize("algo", ["ring", "recursive_doubling", "twotree"])
def test_hook_forced_algorithm(comm, groups, algo):
    ref = DDP(make_model(), process_group=groups["gloo"])
    train(ref, comm.rank, 3)
    m = DDP(make_model(), process_group=groups["gloo"])
    state = wt.HookState(comm, algo=algo)
    m.register_comm_hook(state, wt.allreduce_hook)
    train(m, comm.rank, 3)
    assert state._lane.last_algorithm("allreduce") == algo
    torch.testing.assert_close(params(m), params(ref), rtol=1e-5, atol=1e-6)
    state.close()


def test_hook_error_reaches_backward(comm, groups):
    """an allreduce that fails on the hook's thread (the board carries at
    most 8 KiB; the model's bucket is 9.6 KB) fails DDP's backward with
    weft's message, and the next state works"""
    m = DDP(make_model(), process_group=groups["gloo"])
    state = wt.HookState(comm, algo="board")
    m.register_comm_hook(state, wt.allreduce_hook)
    with pytest.raises(Exception, match="board carries at most"):
        train(m, comm.rank, 1)
    state.close()
    with pytest.raises(weft.InvalidArgument, match="closed"):
        state._enqueue(torch.ones(1), torch.futures.Future())
    ok = DDP(make_model(), process_group=groups["gloo"])
    state = wt.HookState(comm)
    ok.register_comm_hook(state, wt.allreduce_hook)
    train(ok, comm.rank, 2)
    assert same_everywhere(comm, params(ok))
    state.close()


def test_backend_ddp_matches_gloo(comm, groups):
    ref = DDP(make_model(), process_group=groups["gloo"])
    train(ref, comm.rank)
    m = DDP(make_model(), process_group=groups["weft"])
    train(m, comm.rank)
    torch.testing.assert_close(params(m), params(ref), rtol=1e-5, atol=1e-6)
    assert same_everywhere(comm, params(m))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16,
                                   torch.int64, torch.int8])
def test_backend_collectives(comm, groups, dtype):
    g, P, r = groups["weft"], comm.size, comm.rank
    t = (torch.arange(10) % 7 + r).to(dtype)
    dist.all_reduce(t, group=g)
    want = (torch.arange(10) % 7 * P + P * (P - 1) // 2).to(dtype)
    assert torch.equal(t, want), (t, want)  # small integers: exact in every dtype here
    t = torch.full((5,), r).to(dtype)
    dist.all_reduce(t, op=dist.ReduceOp.MAX, group=g)
    assert (t == P - 1).all()
    b = torch.full((4,), r).to(dtype)
    dist.broadcast(b, src=P - 1, group=g)
    assert (b == P - 1).all()
    s = torch.ones(6, dtype=dtype)
    dist.reduce(s, dst=0, group=g)
    if r == 0:
        assert (s == P).all()
    outs = [torch.zeros(2, dtype=dtype) for _ in range(P)]
    dist.all_gather(outs, torch.full((2,), r).to(dtype), group=g)
    assert [int(o[0]) for o in outs] == list(range(P))
    flat = torch.zeros(2 * P, dtype=dtype)
    dist.all_gather_into_tensor(flat, torch.full((2,), r).to(dtype), group=g)
    assert flat.tolist() == [float(q) if dtype.is_floating_point else q
                             for q in range(P) for _ in range(2)]
    out = torch.zeros(3, dtype=dtype)
    dist.reduce_scatter(out, [torch.full((3,), q + r).to(dtype) for q in range(P)], group=g)
    assert (out == P * r + P * (P - 1) // 2).all()
    # reduce_scatter_tensor (FSDP's call): block q of the input to rank q
    inp = torch.cat([torch.full((3,), q + r) for q in range(P)]).to(dtype)
    out = torch.zeros(3, dtype=dtype)
    dist.reduce_scatter_tensor(out, inp, op=dist.ReduceOp.MAX, group=g)
    assert (out == r + P - 1).all(), out
    # gather and scatter, to and from the last rank
    got = [torch.zeros(2, dtype=dtype) for _ in range(P)] if r == P - 1 else None
    dist.gather(torch.full((2,), r).to(dtype), got, dst=P - 1, group=g)
    if r == P - 1:
        assert [int(x[1]) for x in got] == list(range(P))
    mine = torch.zeros(3, dtype=dtype)
    dist.scatter(mine, [torch.full((3,), q + 1).to(dtype) for q in range(P)]
                 if r == P - 1 else None, src=P - 1, group=g)
    assert (mine == r + 1).all(), mine
    dist.barrier(group=g)


def test_backend_objects(comm, groups):
    """torch's object calls, which ride on the tensor ones (gather_object on
    allgather and gather, scatter_object_list on broadcast and scatter)"""
    P, r, g = comm.size, comm.rank, groups["weft"]
    objs = [None] * P if r == 0 else None
    dist.gather_object({"rank": r, "x": "y" * r}, objs, dst=0, group=g)
    if r == 0:
        assert objs == [{"rank": q, "x": "y" * q} for q in range(P)]
    out = [None]
    dist.scatter_object_list(out, [("to", q) for q in range(P)] if r == P - 1 else None,
                             src=P - 1, group=g)
    assert out == [("to", r)]
    everyone = [None] * P
    dist.all_gather_object(everyone, r * r, group=g)
    assert everyone == [q * q for q in range(P)]


def test_hook_tensor_dtypes(comm):
    for dtype in (torch.bfloat16, torch.float16, torch.float32, torch.int32):
        t = torch.full((1000,), comm.rank + 1).to(dtype)
        wt.allreduce_(comm, t)
        assert (t == comm.size * (comm.size + 1) // 2).all()


def test_bad_tensors(comm, groups):
    with pytest.raises(weft.InvalidArgument, match="not contiguous"):
        wt.allreduce_(comm, torch.ones(4, 4).t())
    with pytest.raises(weft.InvalidArgument, match="not one weft has"):
        wt.allreduce_(comm, torch.ones(3, dtype=torch.complex64))
    with pytest.raises(weft.InvalidArgument, match="torch.Tensor"):
        wt.allreduce_(comm, np.ones(3))
    with pytest.raises(weft.InvalidArgument, match="unknown op"):
        wt.allreduce_(comm, torch.ones(3), op="avg")
    with pytest.raises(weft.NotSupported, match="no alltoall"):
        dist.all_to_all([torch.ones(1)] * comm.size, [torch.ones(1)] * comm.size,
                        group=groups["weft"])
    with pytest.raises(weft.NotSupported, match="reduce op AVG is not one weft has"):
        dist.all_reduce(torch.ones(2), op=dist.ReduceOp.AVG, group=groups["weft"])
    with pytest.raises(weft.NotSupported, match="reduce: reduce op PREMUL_SUM is not"):
        dist.reduce(torch.ones(2), 0, op=dist._make_nccl_premul_sum(2.0), group=groups["weft"])
    # refused on every rank alike (each takes the call as refused): no hang
    with pytest.raises(weft.InvalidArgument, match="not contiguous"):
        dist.all_reduce(torch.ones(4, 4).t(), group=groups["weft"])
    with pytest.raises(weft.InvalidArgument, match="not one weft has"):
        dist.broadcast(torch.ones(3, dtype=torch.complex64), src=0, group=groups["weft"])
    with pytest.raises(weft.InvalidArgument, match="reduce_scatter_tensor: the output holds 2 "):
        dist.reduce_scatter_tensor(torch.zeros(2), torch.ones(3 * comm.size), group=groups["weft"])
    # a tensor refused on one rank only: the call is recorded there as the
    # others make it (its dtype and count), so they fail naming it
    # (PeerError) and the job goes on; refused as of no datatype, it read
    # to them as a call made otherwise, and the job ended
    if comm.size > 1:
        if comm.rank == 0:
            with pytest.raises(weft.InvalidArgument, match="not contiguous"):
                dist.all_reduce(torch.ones(4, 4).t(), group=groups["weft"])
        else:
            with pytest.raises(weft.PeerError, match="rank 0 refused allreduce"):
                dist.all_reduce(torch.ones(16), group=groups["weft"])
    # the root's list of the wrong length: refused there, and the others,
    # which wait for its block, fail naming it
    if comm.size > 1:
        if comm.rank == 0:
            with pytest.raises(weft.InvalidArgument, match="scatter: the root wants %d inputs"
                               % comm.size):
                dist.scatter(torch.zeros(2), [torch.ones(2)], src=0, group=groups["weft"])
        else:
            with pytest.raises(weft.PeerError, match="refused scatter|abandoned scatter"):
                dist.scatter(torch.zeros(2), None, src=0, group=groups["weft"])
    t = torch.arange(4.0)
    dist.all_reduce(t, group=groups["weft"])  # the group still works
    assert torch.equal(t, torch.arange(4.0) * comm.size)


def test_backend_subgroup(comm, groups):
    """new_group of fewer ranks than the job: made on every rank (no hang in
    torch's barrier), each call on it refused naming the way round; a group
    of every rank, in any order given, is served."""
    P, r = comm.size, comm.rank
    members = list(range(max(P - 1, 1)))
    g = dist.new_group(members, backend="weft")
    if r in members and len(members) < P:
        with pytest.raises(weft.NotSupported, match="allreduce on a group of %d of the job's %d "
                                                    "ranks.*use gloo" % (P - 1, P)):
            dist.all_reduce(torch.ones(2), group=g)
        with pytest.raises(weft.NotSupported, match="broadcast on a group of"):
            dist.broadcast(torch.ones(2), src=0, group=g)
        with pytest.raises(weft.NotSupported, match="barrier on a group of"):
            dist.barrier(group=g)
    elif r in members:  # P = 1: the group of one is the job
        t = torch.ones(2)
        dist.all_reduce(t, group=g)
        assert torch.equal(t, torch.ones(2))
    full = dist.new_group(list(reversed(range(P))), backend="weft")
    t = torch.full((3,), float(r))
    dist.all_reduce(t, group=full)
    assert (t == P * (P - 1) / 2).all()
    dist.barrier(group=groups["weft"])
