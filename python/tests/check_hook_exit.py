"""The overlapped DDP hook and the end of the job: weft.finalize() closes a
HookState left open (its thread stopped, its communicator freed) before it
leaves, and a program that never calls finalize() exits cleanly through the
interpreter's exit hook.  Run under `weft run -n P`: prints "hook exit ok"
on every rank."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
from torch.nn.parallel import DistributedDataParallel as DDP  # noqa: E402

import weft  # noqa: E402
import weft.torch as wt  # noqa: E402

comm = wt.init_process_group("gloo")
torch.manual_seed(0)
model = DDP(nn.Linear(100, 10))
state = wt.HookState(comm)
model.register_comm_hook(state, wt.allreduce_hook)
left_open = wt.HookState(comm)  # made, never used, never closed
model(torch.randn(4, 100)).sum().backward()
assert state._thread.is_alive() and state.calls >= 1
thread = state._thread
if sys.argv[1:] == ["finalize"]:
    weft.finalize()
    assert not thread.is_alive(), "finalize left the hook's thread running"
    assert state._lane is None and left_open._lane is None, "finalize left a hook's communicator"
print("hook exit ok (rank %d)" % comm.rank, flush=True)
# without "finalize": the interpreter's exit finalizes, closing both states
