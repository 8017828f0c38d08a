"""train_ddp.py — data-parallel training on CPU with DDP, gradients averaged
by gloo or by weft, on synthetic data; prints steps per second and the time
spent averaging gradients per step (with the overlapped weft hook, the time
its thread spent, part of it hidden behind the backward pass).

    weft run -n 4 python3 examples/train_ddp.py --model mlp --comm weft
    weft run -n 4 python3 examples/train_ddp.py --model cnn --comm gloo --mif 4

--comm gloo          DDP over gloo, each bucket averaged by gloo's allreduce
                     (through a hook doing what DDP's default does, so that
                     its time can be measured the same way as weft's)
--comm weft          DDP over gloo's process group, buckets averaged by
                     weft.torch.allreduce_hook on its own thread, overlapping
                     the backward pass (--algo forces an algorithm; AUTO by
                     default)
--comm weft-inline   the same hook making each allreduce in the hook itself
                     (HookState(overlap=False)): no overlap
--comm weft-backend  DDP over the "weft" torch.distributed backend
--comm gloo,weft     several, trained one after the other in the same
                     processes from the same start (a line each)
--mif X              before each step every rank sleeps r x --delay-us, r
                     drawn uniform in [0, X] per rank and step (the maximum
                     imbalance factor of the arrival-pattern seed)

Every rank draws its own batches from a generator seeded by its rank, and
the model starts from the same seed everywhere, so every --comm ends at the
same loss and parameters (to float tolerance): the last line prints the
final loss and a checksum of the parameters to compare.
"""
import argparse
import os
import random
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.nn as nn  # noqa: E402
from torch.nn.parallel import DistributedDataParallel as DDP  # noqa: E402

import weft  # noqa: E402
import weft.torch as wt  # noqa: E402


def make_model(name):
    torch.manual_seed(0)
    if name == "mlp":  # 784-1024-512-10: 1.33 M parameters, 5.3 MB of gradients per step
        return nn.Sequential(nn.Flatten(), nn.Linear(784, 1024), nn.ReLU(), nn.Linear(1024, 512),
                             nn.ReLU(), nn.Linear(512, 10))
    if name == "cnn":  # LeNet-like on 28x28: 0.29 M parameters, mostly compute
        return nn.Sequential(nn.Conv2d(1, 32, 5), nn.ReLU(), nn.MaxPool2d(2),
                             nn.Conv2d(32, 64, 5), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                             nn.Linear(64 * 4 * 4, 256), nn.ReLU(), nn.Linear(256, 10))
    raise SystemExit("train_ddp: unknown model %r (mlp, cnn)" % name)


class GlooTimed:
    """DDP's default averaging (allreduce of the bucket over the process
    group, then a division), synchronous and timed."""

    def __init__(self, group, size):
        self.group, self.size = group, size
        self.seconds, self.calls = 0.0, 0


def gloo_hook(state, bucket):
    buf = bucket.buffer()
    t0 = time.perf_counter()
    dist.all_reduce(buf, group=state.group)
    buf.div_(state.size)
    state.seconds += time.perf_counter() - t0
    state.calls += 1
    fut = torch.futures.Future()
    fut.set_result(buf)
    return fut


COMMS = ("gloo", "weft", "weft-inline", "weft-backend")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--model", default="mlp", choices=["mlp", "cnn"])
    ap.add_argument("--comm", default="weft",
                    help="one of %s, or several comma-separated: trained one after the "
                         "other in the same processes, a line each" % ", ".join(COMMS))
    ap.add_argument("--algo", default=None, help="weft's allreduce algorithm (default AUTO)")
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--batch", type=int, default=32, help="per rank")
    ap.add_argument("--mif", type=float, default=0.0)
    ap.add_argument("--delay-us", type=float, default=1000.0)
    ap.add_argument("--csv", default=None, help="append a line of figures to this file")
    a = ap.parse_args()
    comms = a.comm.split(",")
    for c in comms:
        if c not in COMMS:
            raise SystemExit("train_ddp: --comm %r: want %s, comma-separated" % (c, ", ".join(COMMS)))
    if a.algo and any(c not in ("weft", "weft-inline") for c in comms):
        raise SystemExit("train_ddp: --algo is for --comm weft and weft-inline")
    torch.set_num_threads(1)  # the ranks share the machine's cores
    for c in comms:
        a.comm = c
        train(a)


def train(a):
    """Trains from the same start with a.comm, prints the figures' line."""
    comm = wt.init_process_group("weft" if a.comm == "weft-backend" else "gloo")
    group = dist.distributed_c10d._get_default_group()
    model = DDP(make_model(a.model), process_group=group)
    if a.comm == "gloo":
        state = GlooTimed(group, comm.size)
        model.register_comm_hook(state, gloo_hook)
    elif a.comm in ("weft", "weft-inline"):
        state = wt.HookState(comm, algo=a.algo, overlap=a.comm == "weft")
        model.register_comm_hook(state, wt.allreduce_hook)
    else:
        state = None  # the backend's calls are DDP's own: not timed apart
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    g = torch.Generator().manual_seed(1000 + comm.rank)
    delays = random.Random(7 + comm.rank)
    # a fixed synthetic task: labels from a fixed random linear map of the input
    w_true = torch.randn(784, 10, generator=torch.Generator().manual_seed(5))

    step_times, comm_before = [], 0.0
    for step in range(a.warmup + a.steps):
        if step == a.warmup:
            comm.barrier()
            comm_before = state.seconds if state else 0.0
            t_start = time.perf_counter()
        if a.mif:
            time.sleep(delays.uniform(0, a.mif) * a.delay_us * 1e-6)
        t0 = time.perf_counter()
        x = torch.randn(a.batch, 1, 28, 28, generator=g)
        y = (x.reshape(a.batch, -1) @ w_true).argmax(1)
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        if step >= a.warmup:
            step_times.append(time.perf_counter() - t0)
    total = time.perf_counter() - t_start
    comm_s = (state.seconds - comm_before) if state else float("nan")

    # what served the last bucket (AUTO's pick; buckets differ in size),
    # read before the figures' own allreduce below
    if a.comm == "weft-backend":
        picked = comm.last_algorithm("allreduce")
    else:
        picked = state.last_algorithm() if a.comm != "gloo" else "-"
    import numpy as np
    figs = np.array([a.steps / total, comm_s / a.steps * 1e3, loss.item()], dtype=np.float64)
    worst = comm.allreduce(figs.copy(), op="min")  # the slowest rank's steps/s
    mean = comm.allreduce(figs.copy()) / comm.size
    flat = torch.cat([p.detach().reshape(-1) for p in model.parameters()]).double()
    checksum = float(flat.sum() + (flat * torch.arange(flat.numel(), dtype=torch.float64)).sum()
                     / flat.numel())
    algo = a.algo or ("auto" if a.comm != "gloo" else "-")
    if comm.rank == 0:
        line = ("model=%s P=%d comm=%s algo=%s picked=%s mif=%g steps_per_s=%.2f "
                "comm_ms_per_step=%.3f final_loss=%.6f checksum=%.9g"
                % (a.model, comm.size, a.comm, algo, picked, a.mif, worst[0], mean[1], mean[2],
                   checksum))
        print(line, flush=True)
        if a.csv:
            new = not os.path.exists(a.csv)
            with open(a.csv, "a") as f:
                if new:
                    f.write("model,P,comm,algo,picked,mif,steps_per_s,comm_ms_per_step,"
                            "final_loss,checksum\n")
                f.write("%s,%d,%s,%s,%s,%g,%.4f,%.4f,%.6f,%.9g\n" % (
                    a.model, comm.size, a.comm, algo, picked, a.mif, worst[0], mean[1], mean[2],
                    checksum))
    if a.comm in ("weft", "weft-inline"):
        state.close()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
