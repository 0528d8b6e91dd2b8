"""Measured ceilings: the per-GPU cache on CPU, the measurement itself on a GPU."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from kernelopt.hardware import get_gpu_spec, gpus
from kernelopt.harness.measure.ceilings import (
    Ceilings,
    default_cache_dir,
    load_ceilings,
    load_or_measure_ceilings,
    measure_ceilings,
    save_ceilings,
)

FAKE = Ceilings(gpu_name="NVIDIA Fake GPU", bandwidth_gbs=4240.0,
                peak_tflops={"fp32": 51.0, "tf32": 356.0, "bf16": 680.0, "fp16": 690.0})


def test_save_and_load_round_trip(tmp_path: Path) -> None:
    path = save_ceilings(FAKE, tmp_path)
    assert path.parent == tmp_path and path.suffix == ".json"
    assert load_ceilings(FAKE.gpu_name, tmp_path) == FAKE


def test_absent_corrupt_or_foreign_cache_reads_as_none(tmp_path: Path) -> None:
    assert load_ceilings("NVIDIA Nothing", tmp_path) is None
    save_ceilings(FAKE, tmp_path).write_text("{broken")
    assert load_ceilings(FAKE.gpu_name, tmp_path) is None
    # another name that slugs to the same file must not borrow these ceilings
    save_ceilings(FAKE, tmp_path)
    assert load_ceilings("NVIDIA Fake/GPU", tmp_path) is None


def test_default_cache_dir_honours_xdg(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert default_cache_dir() == tmp_path / "kernelopt" / "ceilings"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert default_cache_dir() == Path.home() / ".cache" / "kernelopt" / "ceilings"


def test_measures_once_then_serves_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(gpus, "cuda_available", lambda: True)  # what it asks first: no driver, no torch to import
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda device=0: FAKE.gpu_name)
    calls: list[int] = []

    def fake_measure(device: int) -> Ceilings:
        calls.append(device)
        return FAKE

    assert load_or_measure_ceilings(tmp_path, measure=fake_measure) == FAKE
    assert load_or_measure_ceilings(tmp_path, measure=fake_measure) == FAKE
    assert calls == [0]


def test_none_without_cuda(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gpus, "cuda_available", lambda: False)

    def must_not_run(device: int) -> Ceilings:
        raise AssertionError("measured without CUDA")

    assert load_or_measure_ceilings(tmp_path, measure=must_not_run) is None


def test_failed_measurement_is_none_and_not_cached(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(gpus, "cuda_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda device=0: FAKE.gpu_name)
    calls: list[int] = []

    def out_of_memory(device: int) -> Ceilings:
        calls.append(device)
        raise torch.cuda.OutOfMemoryError("CUDA out of memory")

    assert load_or_measure_ceilings(tmp_path, measure=out_of_memory) is None
    assert calls == [0]  # it was measured, and failed
    assert load_ceilings(FAKE.gpu_name, tmp_path) is None


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_measure_ceilings_on_a_real_gpu() -> None:
    tf32_before = torch.backends.cuda.matmul.allow_tf32
    ceilings = measure_ceilings(0)
    assert torch.backends.cuda.matmul.allow_tf32 == tf32_before
    assert ceilings.gpu_name == torch.cuda.get_device_name(0)
    peaks = ceilings.peak_tflops
    assert set(peaks) == {"fp32", "tf32", "bf16", "fp16"}
    assert 0 < peaks["fp32"] < peaks["tf32"] < peaks["bf16"]
    try:
        spec = get_gpu_spec(ceilings.gpu_name)
    except ValueError:
        return
    # Sustained figures land below the datasheet, but not far below.
    assert 0.5 * spec.memory_bandwidth_gbs < ceilings.bandwidth_gbs <= spec.memory_bandwidth_gbs
    assert 0.4 * spec.peak_bf16_tflops < peaks["bf16"] <= 1.05 * spec.peak_bf16_tflops
