"""Many problems at once: a pool over the GPUs of one host (`pool.py`), Ray tasks across hosts
(`ray_tasks.py`), and which of them a `kernelopt suite` gets (`choose.py`). Each is an `Executor`
of `kernelopt.suite`: it runs `run_problem` on every spec and yields the results as they finish.
"""
