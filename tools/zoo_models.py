"""The model zoo: real architectures from torchvision, Hugging Face transformers and timm,
built in code with random weights (nothing is downloaded), for ``tools/gen_zoo.py``,
``tests/zoo/test_zoo.py`` and the benchmarks.

    from zoo_models import ZOO
    module, example_inputs = ZOO["resnet18"].build()

``ZOO`` maps a model name to a ``ZooModel``: its family (``torchvision``,
``torchvision-seg``, ``hf``, ``timm``), the package it needs, the modes it is compiled in
(``script``, ``trace``; ``freeze``, the scripted module frozen, for the CI subset's
torchvision models: a frozen graph runs what the scripted one does, and the full sweep's time
is better spent on more models), and ``build(size=0)``,
which returns the module in eval mode and a tuple of example inputs (batch 1; ``size=1``
is a second input size, for the few models with ``sizes == 2``: a scripted graph is
shape-generic and must run on it too).

Weights are random, made so that no layer is an identity: each model is built under
``torch.manual_seed(crc32(name))``, BatchNorm running statistics are redrawn (mean from
N(0, 0.1), variance from U(0.5, 1.5)) and every parameter whose values are all equal
(LayerNorm's ones and zeros, a zero class token, a layer-scale constant) is redrawn around
its value (plus N(0, 0.1)).  Inputs are small where the architecture allows (64x64 or 96x96
images, 16 tokens); 224 where it fixes the size (maxvit_t).  The timm models, one per
module of ``timm/models/``, and the families left out, are listed in ``tools/zoo_timm.py``.

torchvision's wheel carries a compiled extension that does not load with the CPU build of
torch; its model definitions are pure Python, so we import it with
``torchvision._meta_registrations`` stubbed out (``import_torchvision``) before torchvision,
timm or transformers is imported.  ``available(model)`` says whether a model's package is
installed (None) or why not.
"""

from __future__ import annotations

import importlib
import sys
import types
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from zoo_timm import TIMM_HEAVY, TIMM_MODELS

Inputs = tuple[Any, ...]

# The models CI runs on every push (tests/zoo/test_zoo.py): one per family, a few minutes in all.
CI_SUBSET: tuple[str, ...] = (
    "resnet18", "mobilenet_v3_small", "efficientnet_b0", "regnet_x_400mf", "fcn_resnet50", "bert", "gpt2",
    "timm_convnext_atto",
)


@dataclass(frozen=True)
class ZooModel:
    """One zoo model: how to build it and its example inputs, and how to compile it."""

    name: str
    family: str  # torchvision | torchvision-seg | hf | timm
    requires: str  # the package that defines it: torchvision | transformers | timm
    make: Callable[[], torch.nn.Module]
    inputs: Callable[[int], Inputs]  # size index (0, or 1 for the second size) -> inputs
    modes: tuple[str, ...] = ("script", "trace")  # the CI subset's models also "freeze"
    sizes: int = 1  # 2: also run the scripted graph on a second input size
    heavy: bool = False  # over ~100M parameters: the full zoo only
    strict: bool = True  # False: trace with strict=False (a dict output)

    def build(self, size: int = 0) -> tuple[torch.nn.Module, Inputs]:
        """The model in eval mode with random weights, and its example inputs (seeded)."""
        if size >= self.sizes:
            raise ValueError(f"{self.name} has {self.sizes} input size(s), not {size + 1}")
        import_torchvision()
        torch.manual_seed(self.seed)
        with torch.no_grad():
            module = self.make()
            randomize(module)
        module.eval()
        return module, self.example_inputs(size)

    @property
    def seed(self) -> int:
        return zlib.crc32(self.name.encode())

    def example_inputs(self, size: int = 0) -> Inputs:
        """The example inputs of input size ``size`` alone (seeded as ``build`` seeds them)."""
        torch.manual_seed(self.seed + 1 + size)
        return self.inputs(size)


def import_torchvision() -> Any:
    """Import torchvision with its compiled extension's registrations stubbed out."""
    if "torchvision" not in sys.modules:
        sys.modules.setdefault("torchvision._meta_registrations", types.ModuleType("torchvision._meta_registrations"))
    return importlib.import_module("torchvision")


def available(model: ZooModel) -> str | None:
    """None when ``model``'s package imports here, else the reason it does not."""
    try:
        if model.requires == "torchvision":
            import_torchvision()
        else:
            import_torchvision()  # timm and transformers import torchvision when present
            importlib.import_module(model.requires)
    except Exception as err:  # noqa: BLE001 - any import failure is a reason to skip
        return f"{model.requires} is not importable: {type(err).__name__}: {err}"
    return None


@torch.no_grad()
def randomize(module: torch.nn.Module) -> None:
    """Redraw BatchNorm statistics and constant parameters, so no layer is an identity."""
    for sub in module.modules():
        mean, var = getattr(sub, "running_mean", None), getattr(sub, "running_var", None)
        if isinstance(mean, torch.Tensor) and isinstance(var, torch.Tensor):
            mean.copy_(torch.randn_like(mean) * 0.1)
            var.copy_(torch.rand_like(var) + 0.5)
    for param in module.parameters():
        if param.is_floating_point() and param.numel() > 0 and bool((param == param.flatten()[0]).all()):
            param.add_(torch.randn_like(param) * 0.1)


# -- inputs -------------------------------------------------------------------------------


def image(*sizes: int | tuple[int, int]) -> Callable[[int], Inputs]:
    """Inputs: one image batch (1, 3, H, W) per size index."""
    def make(size: int) -> Inputs:
        hw = sizes[size]
        h, w = hw if isinstance(hw, tuple) else (hw, hw)
        return (torch.randn(1, 3, h, w),)
    return make


def tokens(vocab: int, *lengths: int, mask: bool = True, decoder: bool = False) -> Callable[[int], Inputs]:
    """Inputs: token ids (1, L) (and an attention mask with the last two positions off;
    and decoder ids of length L // 2 for an encoder-decoder)."""
    def make(size: int) -> Inputs:
        n = lengths[size]
        ids = torch.randint(0, vocab, (1, n))
        out: list[Any] = [ids]
        if mask:
            attention = torch.ones(1, n, dtype=torch.int64)
            attention[:, -2:] = 0
            out.append(attention)
        if decoder:
            out.append(torch.randint(0, vocab, (1, max(n // 2, 1))))
        return tuple(out)
    return make


# -- torchvision --------------------------------------------------------------------------

# Input sizes that differ from 64x64: inception needs >= 75, maxvit's partitions fix 224.
_TV_SIZES: dict[str, int | tuple[int, int]] = {"inception_v3": 96, "maxvit_t": 224, "googlenet": 96, "vit_h_14": 56}
# Keyword arguments that shrink the fixed image size of a transformer.
_TV_KWARGS: dict[str, dict[str, Any]] = {
    "vit_b_16": {"image_size": 64}, "vit_b_32": {"image_size": 64}, "vit_l_16": {"image_size": 64},
    "vit_l_32": {"image_size": 64}, "vit_h_14": {"image_size": 56},
    "inception_v3": {"aux_logits": False, "init_weights": True},
    "googlenet": {"aux_logits": False, "init_weights": True},
}
_TV_SECOND: dict[str, tuple[int, int]] = {
    "resnet18": (96, 80), "mobilenet_v3_small": (80, 96), "efficientnet_b0": (96, 96), "fcn_resnet50": (48, 64),
}
# Over ~100M parameters (minutes per run and gigabytes of weights): the full zoo only.
_TV_HEAVY = {
    "vit_h_14", "vit_l_16", "vit_l_32", "regnet_y_128gf", "regnet_y_32gf", "regnet_y_16gf", "regnet_x_32gf",
    "convnext_large", "efficientnet_v2_l", "vgg11", "vgg11_bn", "vgg13", "vgg13_bn", "vgg16", "vgg16_bn",
    "vgg19", "vgg19_bn", "wide_resnet101_2", "swin_v2_b", "swin_b", "convnext_base", "resnext101_64x4d",
    "resnext101_32x8d",
}


def _torchvision_names(segmentation: bool) -> list[str]:
    tv = import_torchvision()
    return sorted(tv.models.list_models(module=tv.models.segmentation if segmentation else tv.models))


def _tv_builder(name: str, segmentation: bool) -> Callable[[], torch.nn.Module]:
    def make() -> torch.nn.Module:
        tv = import_torchvision()
        if segmentation:  # a small head, no auxiliary classifier, no downloaded backbone
            return tv.models.get_model(name, weights=None, weights_backbone=None, num_classes=5, aux_loss=False)
        return tv.models.get_model(name, weights=None, **_TV_KWARGS.get(name, {}))
    return make


def _torchvision_models() -> list[ZooModel]:
    try:
        import_torchvision()
    except Exception:  # noqa: BLE001 - without torchvision the zoo lists its other families
        return []
    models = []
    for segmentation in (False, True):
        for name in _torchvision_names(segmentation):
            size = _TV_SIZES.get(name, 64)
            second = _TV_SECOND.get(name)
            models.append(ZooModel(
                name, "torchvision-seg" if segmentation else "torchvision", "torchvision",
                _tv_builder(name, segmentation),
                image(size, second) if second else image(size),
                modes=("script", "trace", "freeze") if name in CI_SUBSET else ("script", "trace"),
                sizes=2 if second else 1, heavy=name in _TV_HEAVY,
                strict=not segmentation,  # a segmentation model returns a dict: trace it strict=False
            ))
    return models


# -- Hugging Face transformers ------------------------------------------------------------

_HF_COMMON = {"torchscript": True, "return_dict": False}
_VOCAB = 512


def _hf(config_name: str, model_name: str, **config: Any) -> Callable[[], torch.nn.Module]:
    def make() -> torch.nn.Module:
        tr = importlib.import_module("transformers")
        cfg = getattr(tr, config_name)(**{**_HF_COMMON, **config})
        return getattr(tr, model_name)(cfg)
    return make


def _whisper_encoder() -> torch.nn.Module:
    tr = importlib.import_module("transformers")
    from transformers.models.whisper.modeling_whisper import WhisperEncoder

    cfg = tr.WhisperConfig(
        vocab_size=_VOCAB, num_mel_bins=16, encoder_layers=2, encoder_attention_heads=4, decoder_layers=1,
        decoder_attention_heads=4, d_model=64, encoder_ffn_dim=128, decoder_ffn_dim=128,
        max_source_positions=32, max_target_positions=32, pad_token_id=0, bos_token_id=0, eos_token_id=0,
        decoder_start_token_id=0, **_HF_COMMON,
    )
    return WhisperEncoder(cfg)


_BERTLIKE = {
    "vocab_size": _VOCAB, "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
    "intermediate_size": 128, "max_position_embeddings": 64,
}


def _hf_models() -> list[ZooModel]:
    def hf(name: str, make: Callable[[], torch.nn.Module], inputs: Callable[[int], Inputs], sizes: int = 1,
           strict: bool = True) -> ZooModel:
        return ZooModel(name, "hf", "transformers", make, inputs, modes=("script", "trace"), sizes=sizes,
                        strict=strict)

    return [
        hf("bert", _hf("BertConfig", "BertModel", **_BERTLIKE), tokens(_VOCAB, 16, 24), sizes=2),
        hf("distilbert", _hf("DistilBertConfig", "DistilBertModel", vocab_size=_VOCAB, dim=64, n_layers=2,
                             n_heads=4, hidden_dim=128, max_position_embeddings=64), tokens(_VOCAB, 16)),
        hf("roberta", _hf("RobertaConfig", "RobertaModel", **_BERTLIKE), tokens(_VOCAB, 16)),
        # GPT2Model's second positional argument is past_key_values: the ids alone, no cache.
        hf("gpt2", _hf("GPT2Config", "GPT2Model", vocab_size=_VOCAB, n_positions=64, n_embd=64, n_layer=2,
                       n_head=4, use_cache=False, bos_token_id=0, eos_token_id=0),
           tokens(_VOCAB, 16, mask=False)),
        hf("t5_encoder", _hf("T5Config", "T5EncoderModel", vocab_size=_VOCAB, d_model=64, d_kv=16, d_ff=128,
                             num_layers=2, num_heads=4), tokens(_VOCAB, 16)),
        # transformers 5's T5Model fails with return_dict=False (it reads .last_hidden_state of
        # its decoder's tuple), so the full T5 returns its ModelOutput: traced, a dict output.
        hf("t5", _hf("T5Config", "T5Model", vocab_size=_VOCAB, d_model=64, d_kv=16, d_ff=128, num_layers=2,
                     num_decoder_layers=2, num_heads=4, use_cache=False, return_dict=True),
           tokens(_VOCAB, 16, decoder=True), strict=False),
        hf("vit_hf", _hf("ViTConfig", "ViTModel", image_size=32, patch_size=8, num_channels=3, hidden_size=64,
                         num_hidden_layers=2, num_attention_heads=4, intermediate_size=128), image(32)),
        hf("whisper_encoder", _whisper_encoder, lambda size: (torch.randn(1, 16, 64),)),
    ]


# -- timm ---------------------------------------------------------------------------------

def _timm_builder(name: str, kwargs: dict[str, Any]) -> Callable[[], torch.nn.Module]:
    def make() -> torch.nn.Module:
        timm = importlib.import_module("timm")
        return timm.create_model(name, pretrained=False, **kwargs)
    return make


def _timm_models() -> list[ZooModel]:
    """One model per timm family (``tools/zoo_timm.py`` says which and why)."""
    return [ZooModel(f"timm_{name}", "timm", "timm", _timm_builder(name, kwargs), image(size),
                     heavy=name in TIMM_HEAVY)
            for models in TIMM_MODELS.values() for name, size, kwargs in models]


def _all_models() -> dict[str, ZooModel]:
    models = [*_torchvision_models(), *_hf_models(), *_timm_models()]
    return {m.name: m for m in models}


ZOO: dict[str, ZooModel] = _all_models()
