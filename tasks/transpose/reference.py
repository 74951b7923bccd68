# The task in PyTorch: kforge's yardstick (eager and torch.compile on the same inputs). A view is
# not a transpose: the copy is the work.


def reference(x):
    return x.t().contiguous()
