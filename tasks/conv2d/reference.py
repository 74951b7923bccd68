# The task in PyTorch: kforge's yardstick (eager and torch.compile on the same inputs).
import torch


def reference(x, weight):
    return torch.nn.functional.conv2d(x, weight, padding=1)
