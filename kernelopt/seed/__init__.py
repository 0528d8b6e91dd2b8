"""The compiler seed: the Triton kernels torch.compile writes for a problem's reference, made a
standalone kernelopt kernel file that the offline optimizer starts from, or races against."""

from kernelopt.seed.errors import SeedError

# How round 0 names the compiler seed's candidate (the report's attempts, the optimizer's prompt).
COMPILER_SEED = "the compiler seed: torch.compile's own Triton kernels as a kernel file"

__all__ = ["COMPILER_SEED", "SeedError"]
