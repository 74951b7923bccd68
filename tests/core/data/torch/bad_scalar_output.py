"""Returns a Python number, not a tensor."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return x.sum().item()


n = 4096


def get_inputs():
    return [torch.randn(n)]
