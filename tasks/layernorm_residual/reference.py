# The task in PyTorch: kforge's yardstick (eager and torch.compile on the same inputs).
import torch


def reference(x, r, gamma, beta, *, eps):
    h = x + r
    return torch.nn.functional.layer_norm(h, h.shape[-1:], gamma, beta, eps), h
