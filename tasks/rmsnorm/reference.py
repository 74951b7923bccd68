# The task in PyTorch: kforge's yardstick (eager and torch.compile on the same inputs).
import torch


def reference(x, w, *, eps):
    return torch.nn.functional.rms_norm(x, x.shape[-1:], w, eps)
