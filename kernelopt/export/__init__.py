"""`kernelopt export`: a run's best kernel as a PyTorch custom op, in one module a model can import.

writer.py: export_run(RUN_DIR), export_files(PROBLEM, KERNEL), export_suite(SUITE_OUT).
names.py: op names and the CLI's checks (no torch). facts.py: what an export needs of the problem.
render.py: the module's text. runtime.py: what the op does when called, copied into every module.
"""
