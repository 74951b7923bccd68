"""Dropout in training mode: a different answer on every call."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.drop = nn.Dropout(p=0.5)

    def forward(self, x):
        return self.drop(x)


n = 4096


def get_inputs():
    return [torch.randn(n)]
