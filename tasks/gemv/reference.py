# The task in PyTorch: kforge's yardstick (eager and torch.compile on the same inputs).
import torch


def reference(A, x):
    return torch.mv(A, x)
