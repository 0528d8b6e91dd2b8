"""A candidate is hashed once, where its file is written, and carried (nodes/common.py)."""

from __future__ import annotations

from kernelopt.harness.problem import source_hash
from kernelopt.nodes.common import digest_of, written
from kernelopt.records import Candidate


def test_a_written_candidate_carries_its_hash_and_is_not_read_again(tmp_path):
    text = "import torch\n\nclass ModelNew(torch.nn.Module):\n    pass\n"
    candidate = written(tmp_path / "r001_a0.py", text, "a change", 1, model="m", parent="p.py")
    assert (tmp_path / "r001_a0.py").read_text() == text
    assert candidate.source_hash == source_hash(text) and (candidate.branch, candidate.model) == (1, "m")
    (tmp_path / "r001_a0.py").write_text(text + "# changed on disk afterwards\n")
    assert digest_of(candidate) == source_hash(text)  # the carried hash, not the file's now


def test_a_candidate_from_an_older_checkpoint_is_hashed_from_its_file(tmp_path):
    path = tmp_path / "r001_a0.py"
    path.write_text("x = 1\n")
    assert digest_of(Candidate(str(path), "a change")) == source_hash("x = 1\n")
