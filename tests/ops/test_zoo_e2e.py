"""The operators model zoos reach, end to end: small functions and modules calling them the
way torchvision, Hugging Face and timm code does are scripted and traced by torch, the
printed graphs compiled by irvm and run on the interpreter and the static runtime; every
output must equal torch's.  A GPT-2 from transformers (tiny config, random weights),
traced without an attention mask (the path that calls ``aten::diff``), runs the same way.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch==2.13.0)")
F = torch.nn.functional

import compiler
import vm
from tests.support.against_torch import assert_matches, to_numpy


def packed_positions(position_ids: torch.Tensor, x: torch.Tensor):
    """Hugging Face's packed-sequence detection, and diff on floats with append."""
    first = position_ids[:, :1] - 1
    packed = (torch.diff(position_ids, prepend=first, dim=-1) != 1).cumsum(-1)
    second = torch.diff(x, n=2, dim=0, append=x[:1])
    return packed, second, torch.diff(x > 0, dim=1)


def paddings_and_rolls(x: torch.Tensor):
    """F.pad in every mode (with cropping widths), torch.roll as Swin's shifted windows use it."""
    a = F.pad(x, [1, 2, 0, 1], mode="constant", value=-1.0)
    b = F.pad(x, [2, 1, 1, 1], mode="reflect")
    c = F.pad(x[0], [1, 3], mode="replicate")
    d = F.pad(x, [1, 1, 2, 0], mode="circular")
    e = F.pad(x[1], [-1, 2], mode="reflect")
    f = torch.roll(x, shifts=(-2, -1), dims=(2, 3))
    g = torch.roll(x, 3)
    return a, b, c, d, e, f, g


def interpolations(x: torch.Tensor):
    """Every interpolate mode segmentation heads and ViT position embeddings reach."""
    a = F.interpolate(x, size=(7, 9), mode="nearest")
    b = F.interpolate(x, scale_factor=2.0, mode="nearest-exact")
    c = F.interpolate(x, size=(7, 9), mode="bilinear", align_corners=False)
    d = F.interpolate(x, size=(7, 9), mode="bilinear", align_corners=True)
    e = F.interpolate(x, scale_factor=1.5, mode="bicubic", align_corners=False)
    f = F.interpolate(x, size=(3, 3), mode="bilinear", align_corners=False, antialias=True)
    g = F.interpolate(x, size=(4, 3), mode="bicubic", align_corners=False, antialias=True)
    h = F.upsample(x, scale_factor=2.0, mode="nearest")
    return a, b, c, d, e, f, g, h


def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, padding: torch.Tensor):
    """scaled_dot_product_attention with HF's boolean padding mask, a float additive mask,
    is_causal, an explicit scale and grouped-query heads; einsum and baddbmm attention."""
    bool_mask = padding[:, None, None, :].to(torch.bool)
    float_mask = torch.zeros(bool_mask.shape).masked_fill(~bool_mask, -3.4028234663852886e38)  # finfo.min
    a = F.scaled_dot_product_attention(q, k, v, attn_mask=bool_mask)
    b = F.scaled_dot_product_attention(q, k, v, attn_mask=float_mask, dropout_p=0.0)
    c = F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=0.3)
    d = F.scaled_dot_product_attention(q, k[:, :1], v[:, :1], enable_gqa=True)
    scores = torch.einsum("bhld,bhsd->bhls", q, k)
    e = torch.einsum("bhls,bhsd->blhd", scores.softmax(-1), v)
    flat_q, flat_k = q.flatten(0, 1), k.flatten(0, 1)
    bias = torch.zeros(flat_q.shape[0], flat_q.shape[1], flat_k.shape[1])
    f = torch.baddbmm(bias, flat_q, flat_k.transpose(1, 2), beta=0.0, alpha=0.5)
    g = torch.einsum("...ld,...sd", q, k)
    return a, b, c, d, e, f, g


def fills_and_inplace(x: torch.Tensor, m: torch.Tensor, w: torch.Tensor):
    """masked_fill by a Python number and by a 0-d tensor, in place and not; the in-place
    twins of addmm, baddbmm, cumsum, lerp, clip; list +=."""
    a = x.masked_fill(m, -1e9)
    b = x.masked_fill(m, torch.tensor(2.5))
    c = x.clone()
    c.masked_fill_(m, 0.0)
    d = x.clone()
    d.masked_fill_(~m, torch.tensor(-3.0))
    e = x.clone()
    e.addmm_(x, w, beta=0.5, alpha=2.0)
    f = x.unsqueeze(0).clone()
    f.baddbmm_(x.unsqueeze(0), w.unsqueeze(0))
    g = x.clone()
    g.cumsum_(1)
    h = x.clone()
    h.lerp_(w, 0.25)
    i = x.clone()
    i.clip_(-0.5, 0.5)
    sizes: list[int] = [1, 2]
    sizes += [x.size(0)]
    return a, b, c, d, e, f, g, h, i, x.new_zeros(sizes)


def _args(name: str, g: torch.Generator):
    if name == "packed_positions":
        return torch.tensor([[0, 1, 2, 0, 1, 2, 3], [0, 1, 2, 3, 4, 5, 6]]), torch.randn(4, 5, generator=g)
    if name == "paddings_and_rolls":
        return (torch.randn(2, 3, 4, 5, generator=g),)
    if name == "interpolations":
        return (torch.randn(1, 2, 5, 6, generator=g),)
    if name == "attention":
        q, k, v = (torch.randn(2, 4, 5, 8, generator=g) for _ in range(3))
        return q, k, v, torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]])
    x = torch.randn(4, 4, generator=g)
    return x, x > 0.3, torch.randn(4, 4, generator=g)


FUNCTIONS = [packed_positions, paddings_and_rolls, interpolations, attention, fills_and_inplace]


@pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::torch.jit.TracerWarning")
@pytest.mark.parametrize("mode", ["script", "trace"])
@pytest.mark.parametrize("fn", FUNCTIONS, ids=[f.__name__ for f in FUNCTIONS])
@pytest.mark.parametrize("backend", ["Interpreter", "StaticRuntime"])
def test_zoo_operators_end_to_end(fn, mode, backend) -> None:
    """The scripted or traced function's graph compiles and gives torch's outputs."""
    example = _args(fn.__name__, torch.Generator().manual_seed(0))
    jit = torch.jit.script(fn) if mode == "script" else torch.jit.trace(fn, example, check_trace=False)
    program = compiler.compile_source(str(jit.graph), filename=f"{fn.__name__}.{mode}.ir")
    runner = getattr(vm, backend)(program)
    for seed in range(2):
        args = _args(fn.__name__, torch.Generator().manual_seed(seed))
        assert_matches(runner(*to_numpy(list(args))), jit(*args), atol=2e-5)


def test_gpt2_traced_without_a_mask_matches_torch() -> None:
    """GPT-2 traced with input ids only reaches aten::diff; both backends match torch."""
    import sys
    import types

    sys.modules.setdefault("torchvision._meta_registrations", types.ModuleType("torchvision._meta_registrations"))
    transformers = pytest.importorskip("transformers", reason="transformers is not installed")
    config = transformers.GPT2Config(vocab_size=50, n_embd=16, n_layer=1, n_head=2, n_positions=32,
                                     torchscript=True, return_dict=False, use_cache=False)
    model = transformers.GPT2Model(config).eval()
    ids = torch.randint(0, 50, (1, 6), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        traced = torch.jit.trace(model, example_kwarg_inputs={"input_ids": ids}, check_trace=False, strict=False)
        want = traced(ids)
    text = str(traced.inlined_graph)
    assert "aten::diff" in text
    program = compiler.compile_source(text, filename="gpt2.trace.ir")
    weights = {k: v.detach().numpy() for k, v in traced.state_dict().items()}
    for backend in ("Interpreter", "StaticRuntime"):
        got = getattr(vm, backend)(program, weights)(ids.numpy())
        assert_matches(got, want, atol=2e-5)
