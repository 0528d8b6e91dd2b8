"""The compiler seed: the Triton kernels torch.compile writes for a problem's reference, made a
standalone kernelopt kernel file that the offline optimizer starts from, or races against."""

from kernelopt.seed.errors import SeedError

__all__ = ["SeedError"]
