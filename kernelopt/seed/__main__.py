"""`python -m kernelopt.seed PROBLEM OUT [--wait]`: write the compiler seed of PROBLEM to OUT (a CUDA host)."""

import os
import sys

from kernelopt.seed.generate import main

code = main(sys.argv[1:])
# The seed is written and its report printed: leave now. A normal exit spends seconds shutting down
# the compiler's worker processes and CUDA (2.1 s of 39_L2Norm_'s seed on the H200), time the run waits for.
sys.stdout.flush()
sys.stderr.flush()
os._exit(code)
