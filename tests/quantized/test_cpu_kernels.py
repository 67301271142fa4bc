"""fbgemm's CPU-dependent integers: irvm follows the kernel torch runs on this machine, and
reproduces each of the others when pinned.

torch's fbgemm int8 GEMM adds exactly on a CPU with AVX-512 VNNI and in saturating int16 pairs
without it (vm/ops/quantized/cpu.py).  Both are checked on every machine: the host's kernel
against torch in this process, and every kernel against torch's own outputs recorded on a
VNNI CPU where both ran (tests/data/fbgemm_kernels.npz, written by
tools/record_fbgemm_goldens.py with fbgemm's FBGEMM_ENABLE_INSTRUCTIONS override).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import vm.ops  # noqa: F401  (fills the registry)
from vm.core.quantized import ConvPacked, LinearPacked, QTensor
from vm.ops import registry as R
from vm.ops.quantized import cpu, saturating
from vm.ops.quantized.arith import using_quantized

GOLDENS = Path(__file__).resolve().parents[1] / "data" / "fbgemm_kernels.npz"


def _load() -> tuple[dict[str, np.ndarray], dict[str, dict]]:
    with np.load(GOLDENS) as f:
        data = {k: f[k] for k in f.files}
    return data, json.loads(str(data.pop("settings")))


DATA, SETTINGS = _load()


def _q(name: str) -> QTensor:
    ints, scale, zp = DATA[name], DATA[name + ".scale"], DATA[name + ".zero_point"]
    if scale.size == 1:
        return QTensor(ints, float(scale[0]), int(zp[0]))
    return QTensor(ints, scale, zp, 0)


def irvm_case(case: str, kernel: str) -> np.ndarray:
    """irvm's output for one recorded case, with fbgemm's ``kernel`` pinned."""
    s = SETTINGS[case]
    bias = DATA[f"{case}.bias"]
    with using_quantized(("fbgemm", kernel)):
        if s["kind"] == "conv":
            dims = s["dims"]
            w = _q(f"{case}.w")
            prepack = R.lookup(f"quantized::conv{dims}d_prepack").kernel
            packed = prepack(w, bias, s["stride"], s["padding"], s["dilation"], s["groups"])
            assert isinstance(packed, ConvPacked)
            name = "quantized::conv1d" if dims == 1 else f"quantized::conv{dims}d.new"
            return R.lookup(name).kernel(_q(f"{case}.x"), packed, s["scale"], s["zero_point"]).int_repr
        packed = LinearPacked(_q(f"{case}.w"), bias)
        if s["kind"] == "linear":
            name = "quantized::linear_relu" if s["relu"] else "quantized::linear"
            return R.lookup(name).kernel(_q(f"{case}.x"), packed, s["scale"], s["zero_point"]).int_repr
        return R.lookup("quantized::linear_dynamic").kernel(DATA[f"{case}.x"], packed, s["reduce_range"])


@pytest.mark.parametrize("kernel", ["vnni", "avx512"])
@pytest.mark.parametrize("case", sorted(SETTINGS))
def test_each_kernel_gives_torchs_recorded_integers(case: str, kernel: str) -> None:
    """Pinned to a kernel, every recorded layer (convolutions of every fast path fbgemm has,
    linear static and dynamic) gives exactly what torch's fbgemm gave on it."""
    got, want = irvm_case(case, kernel), DATA[f"{case}.y.{kernel}"]
    assert got.shape == want.shape
    bad = got != want
    assert not bad.any(), f"{case} on {kernel}: {int(bad.sum())} of {bad.size} differ"


def test_the_goldens_exercise_the_difference() -> None:
    """The recorded cases are ones where the kernels disagree (else the test above could not
    tell an emulation from none), and the fast paths where they agree."""
    differ = {c for c in SETTINGS if not np.array_equal(DATA[f"{c}.y.vnni"], DATA[f"{c}.y.avx512"])}
    assert {"linear", "dynamic", "conv3x3", "conv1x1", "conv1d", "conv3d", "depthwise_pad0"} <= differ
    assert {"depthwise3x3", "conv_groupwise_4x4", "conv3d_groupwise", "dynamic_reduce_range"}.isdisjoint(differ)


def test_fbgemms_depthwise_kernel_saturates_on_every_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    """fbgemm's depthwise kernel pairs kernel positions in vpmaddubsw even with VNNI: its
    integers are not the exact sums (irvm's exact accumulator would be off by many steps)."""
    case = "depthwise3x3"
    assert np.array_equal(irvm_case(case, "vnni"), DATA[f"{case}.y.vnni"])
    monkeypatch.setattr(saturating, "conv", lambda x, w, acc, *rest: acc)  # the exact sums
    assert not np.array_equal(irvm_case(case, "vnni"), DATA[f"{case}.y.vnni"])


@pytest.mark.parametrize("case", sorted(SETTINGS))
def test_the_avx2_kernel_differs_from_avx512_only_in_its_groupwise_width(case: str) -> None:
    """An AVX2-only CPU saturates as an AVX-512 one does and packs half as many groups into a
    groupwise convolution: the cases its 32-byte rule sends to the exact kernel give VNNI's
    integers, the rest AVX-512's."""
    s = SETTINGS[case]
    exact = s["kind"] == "conv" and saturating.path(
        DATA[f"{case}.x"].shape[1], DATA[f"{case}.w"].shape, s["stride"], s["padding"], s["dilation"],
        s["groups"], "avx2") == "groupwise"
    want = DATA[f"{case}.y.vnni" if exact else f"{case}.y.avx512"]
    assert np.array_equal(irvm_case(case, "avx2"), want)


def test_the_host_kernel_is_the_one_torch_runs_here() -> None:
    """torch, asked through a layer whose pairs saturate, computes as irvm's host kernel
    (vm.ops.quantized.cpu.host_kernel) does and unlike the other kind."""
    torch = pytest.importorskip("torch")
    torch.backends.quantized.engine = "fbgemm"
    case = "linear"
    x = torch.quantize_per_tensor(torch.from_numpy(_q(f"{case}.x").dequantize()), 0.03, 0, torch.quint8)
    assert np.array_equal(x.int_repr().numpy(), DATA[f"{case}.x"])
    w = torch.quantize_per_tensor(torch.from_numpy(_q(f"{case}.w").dequantize()), 0.02, 0, torch.qint8)
    packed = torch.ops.quantized.linear_prepack(w, torch.from_numpy(DATA[f"{case}.bias"]))
    theirs = torch.ops.quantized.linear(x, packed, 0.2, 64).int_repr().numpy()
    host = cpu.host_kernel()
    other = "avx512" if host == "vnni" else "vnni"
    print("torch's CPU capability:", torch.backends.cpu.get_cpu_capability(), "irvm's host kernel:", host)
    assert np.array_equal(irvm_case(case, host), theirs)
    assert not np.array_equal(irvm_case(case, other), theirs)


def test_the_host_kernel_is_the_default() -> None:
    """With nothing pinned the kernels follow the host."""
    from vm.ops.quantized.arith import using_engine

    with using_engine("fbgemm"):
        assert cpu.fbgemm_kernel() == cpu.host_kernel()
    with cpu.using_kernel("avx2"):
        assert cpu.fbgemm_kernel() == "avx2"


@pytest.mark.parametrize(("flags", "want"), [
    ({"avx2", "avx512f", "avx512bw", "avx512dq", "avx512vl", "avx512_vnni"}, "vnni"),
    ({"avx2", "avx512f", "avx512bw", "avx512dq", "avx512vl"}, "avx512"),
    ({"avx2", "avx512f", "avx512_vnni"}, "avx2"),  # no BW/DQ/VL: fbgemm takes its AVX2 kernels
    ({"avx2", "avx_vnni"}, "avx2"),  # AVX-VNNI without AVX-512 is not a kernel of fbgemm's
    (set(), "avx2"),
])
def test_the_kernel_is_chosen_from_the_cpu_flags_as_fbgemm_chooses(flags: set[str], want: str) -> None:
    assert cpu.kernel_for_features(flags) == want


def test_fbgemms_own_override_is_followed() -> None:
    avx512 = {"avx2", "avx512f", "avx512bw", "avx512dq", "avx512vl", "avx512_vnni"}
    assert cpu.kernel_for_fbgemm_setting("AVX2", avx512) == "avx512"
    assert cpu.kernel_for_fbgemm_setting("AVX2", {"avx2"}) == "avx2"
    assert cpu.kernel_for_fbgemm_setting("avx512_e1", avx512) == "vnni"
    assert cpu.kernel_for_fbgemm_setting("", avx512) is None


def test_an_unknown_kernel_is_refused_by_name() -> None:
    from vm.core.errors import RunError

    with pytest.raises(RunError, match="unknown quantized kernel 'sse'"):
        cpu.check_kernel("sse")
