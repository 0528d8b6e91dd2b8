"""`python -m kernelopt.seed PROBLEM OUT`: write the compiler seed of PROBLEM to OUT (a CUDA host)."""

import sys

from kernelopt.seed.generate import main

sys.exit(main(sys.argv[1:]))
