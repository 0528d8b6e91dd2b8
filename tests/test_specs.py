"""GPU spec database: coverage, dense peaks, lookup by key and device name, detection."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from kernelopt.hardware import GPU_SPECS_DATABASE, UnknownGPUError, detect_gpu_spec, get_gpu_spec

REQUIRED_KEYS = [
    "A100-SXM4-40GB", "A100-SXM4-80GB", "A100-PCIe-40GB", "A100-PCIe-80GB", "H100-SXM",
    "H100-PCIe", "H100-NVL", "H200", "B200", "L40S", "RTX-4090",
]

# What torch.cuda.get_device_name() returns on these GPUs.
DEVICE_NAMES = {
    "NVIDIA H200": "H200",
    "NVIDIA H100 80GB HBM3": "H100-SXM",
    "NVIDIA A100-SXM4-80GB": "A100-SXM4-80GB",
    "NVIDIA A100-SXM4-40GB": "A100-SXM4-40GB",
    "NVIDIA A100 80GB PCIe": "A100-PCIe-80GB",
    "NVIDIA A100-PCIE-40GB": "A100-PCIe-40GB",
    "NVIDIA GeForce RTX 4090": "RTX-4090",
    "NVIDIA L40S": "L40S",
    "NVIDIA H100 PCIe": "H100-PCIe",
    "NVIDIA H100 NVL": "H100-NVL",
    "NVIDIA B200": "B200",
}


def test_database_holds_every_required_gpu() -> None:
    assert set(REQUIRED_KEYS) <= set(GPU_SPECS_DATABASE)
    for key, spec in GPU_SPECS_DATABASE.items():
        assert spec.key == key


def test_database_and_specs_are_read_only() -> None:
    with pytest.raises(TypeError):
        GPU_SPECS_DATABASE["X"] = GPU_SPECS_DATABASE["H200"]  # type: ignore[index]
    with pytest.raises(dataclasses.FrozenInstanceError):
        GPU_SPECS_DATABASE["H200"].sm_count = 1  # type: ignore[misc]


@pytest.mark.parametrize("key", REQUIRED_KEYS)
def test_peaks_are_dense_and_ordered(key: str) -> None:
    spec = GPU_SPECS_DATABASE[key]
    # Tensor cores beat the FP32 pipe; each halving of the operand width doubles the rate.
    assert 0 < spec.peak_fp32_tflops <= spec.peak_tf32_tflops < spec.peak_bf16_tflops
    assert spec.peak_fp16_tflops == spec.peak_bf16_tflops
    assert spec.peak_bf16_tflops == pytest.approx(2 * spec.peak_tf32_tflops, rel=0.03)
    if spec.peak_fp8_tflops is not None:
        assert spec.peak_fp8_tflops == pytest.approx(2 * spec.peak_bf16_tflops, rel=0.02)
    assert spec.memory_bandwidth_gbs > 500 and spec.memory_size_gb >= 24
    assert spec.sm_count > 100 and spec.max_threads_per_sm in (1536, 2048)
    assert spec.source and ("datasheet" in spec.source or "whitepaper" in spec.source)


def test_hopper_peaks_are_not_the_with_sparsity_figures() -> None:
    # The datasheets print 1,979 (bf16) and 3,958 (fp8) TFLOP/s "with sparsity".
    for key in ("H100-SXM", "H200"):
        spec = get_gpu_spec(key)
        assert spec.peak_bf16_tflops < 1000
        assert spec.peak_fp8_tflops is not None and spec.peak_fp8_tflops < 2000
        assert spec.peak_tflops("tf32") < 500


def test_h200_figures() -> None:
    spec = get_gpu_spec("H200")
    assert (spec.sm_count, spec.memory_bandwidth_gbs, spec.memory_size_gb) == (132, 4800, 141)
    assert spec.memory_type == "HBM3e" and spec.compute_capability == "9.0"


def test_ampere_has_no_fp8_peak() -> None:
    with pytest.raises(ValueError, match="fp8"):
        get_gpu_spec("A100-SXM4-80GB").peak_tflops("fp8")


@pytest.mark.parametrize(("device_name", "key"), sorted(DEVICE_NAMES.items()))
def test_device_names_resolve(device_name: str, key: str) -> None:
    assert get_gpu_spec(device_name).key == key


@pytest.mark.parametrize(
    ("loose", "key"),
    [("h200", "H200"), ("h100-sxm", "H100-SXM"), ("RTX 4090", "RTX-4090"),
     ("a100 sxm4 80gb", "A100-SXM4-80GB"), ("nvidia a100 80gb pcie", "A100-PCIe-80GB"),
     ("  L40S ", "L40S")],
)
def test_loose_names_resolve(loose: str, key: str) -> None:
    assert get_gpu_spec(loose).key == key


def test_every_listed_device_name_maps_back_to_its_spec() -> None:
    for spec in GPU_SPECS_DATABASE.values():
        for name in spec.device_names:
            assert get_gpu_spec(name) is spec


def test_unknown_gpu_error_names_the_input_and_the_known_keys() -> None:
    with pytest.raises(UnknownGPUError) as info:
        get_gpu_spec("NVIDIA H200 NVL")  # a different product: must not fall back to H200
    message = str(info.value)
    assert "NVIDIA H200 NVL" in message
    assert all(key in message for key in REQUIRED_KEYS)
    assert isinstance(info.value, ValueError)


def test_detect_without_cuda_is_none(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert detect_gpu_spec() is None


def test_detect_known_unknown_and_broken(monkeypatch: pytest.MonkeyPatch) -> None:
    from kernelopt.hardware import gpus

    monkeypatch.setattr(gpus, "_driver_present", lambda: True)  # a host with a driver's device files
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda device=0: "NVIDIA H200")
    assert detect_gpu_spec() is GPU_SPECS_DATABASE["H200"]
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda device=0: "NVIDIA Mystery 9000")
    assert detect_gpu_spec() is None

    def broken(device: int = 0) -> str:
        raise RuntimeError("CUDA driver initialization failed")

    monkeypatch.setattr(torch.cuda, "get_device_name", broken)
    assert detect_gpu_spec() is None


def test_no_device_file_is_no_gpu_whatever_torch_would_say(monkeypatch: pytest.MonkeyPatch) -> None:
    from kernelopt.hardware import gpus
    from kernelopt.harness.verify import HarnessSettings

    monkeypatch.setattr(gpus, "_driver_present", lambda: False)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)  # not asked: no driver is here
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda device=0: "NVIDIA H200")
    assert not gpus.cuda_available() and detect_gpu_spec() is None
    assert HarnessSettings.detect().use_cuda is False


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_detect_on_a_real_gpu() -> None:
    name = torch.cuda.get_device_name(0)
    spec = detect_gpu_spec()
    if spec is None:
        pytest.skip(f"{name} is not in the database")
    major, minor = torch.cuda.get_device_capability(0)
    assert spec.compute_capability == f"{major}.{minor}"
    assert spec.sm_count == torch.cuda.get_device_properties(0).multi_processor_count
