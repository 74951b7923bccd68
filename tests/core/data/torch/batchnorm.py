"""Batch normalisation in training mode: running statistics and a 0-dimensional counter as buffers."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.bn = nn.BatchNorm2d(features)

    def forward(self, x):
        return self.bn(x)


batch_size = 8
features = 16
height = 64
width = 64


def get_inputs():
    return [torch.randn(batch_size, features, height, width)]


def get_init_inputs():
    return [features]
