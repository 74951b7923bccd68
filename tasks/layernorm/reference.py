# The task in PyTorch: kforge's yardstick (eager and torch.compile on the same inputs).
import torch


def reference(x, gamma, beta, *, eps):
    return torch.nn.functional.layer_norm(x, x.shape[-1:], gamma, beta, eps)
