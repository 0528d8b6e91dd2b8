"""What kernelopt says about its work, in files and on the terminal.

- `run.py`: a run's report.md, report.json and roofline picture (the report node writes them);
  `summary.py` the record they are written from (`RunSummary`: report.json, typed), `story.py` its
  headline, diagnoses and diff, `tree.py` a beam's tree, `models.py` the count per model,
  `pinned.py` the gain from the change against the gain from tuning, `sweep.py` the measured
  sweeps, `plot.py` the roofline picture.
- `figures.py`: the baselines as figures (speedups with their modes named, the gap closed, the
  launch overhead, the method), shared by a run, `kernelopt verify` and a suite.
- `suite.py`: a suite's results.md and picture.
- `progress.py`: the lines a run prints as its events arrive.

Nothing here runs a kernel: every figure comes from records and the run folder's files.
"""
