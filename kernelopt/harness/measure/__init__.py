"""Measurement: the cases a kernel is judged on, the yardstick and the comparison, the one
timing protocol, the problem's floor, the GPU's measured ceilings, and calling a model."""
