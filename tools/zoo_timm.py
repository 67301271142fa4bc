"""timm's families for the model zoo: one model per module of ``timm/models/``.

A *family* is the module that defines a model's entrypoint: ``timm_families()`` groups
``timm.list_models()`` by ``timm.models._registry.model_entrypoint(name).__module__`` (the
last dotted part: ``resnet``, ``vision_transformer``, ``maxxvit``...), so the grouping is
timm's own and a new timm release shows its new families at once
(``tests/test_zoo_timm.py`` checks that every family is either here or excluded).

``TIMM_MODELS`` lists, per family, the model(s) the zoo builds: the smallest variant by
parameter count (timm's ``test_*`` models where the family has one), the smallest image the
architecture accepts (64 px unless a fixed attention window, relative-position table or
partition asks for its native size; ``img_size=`` where the model takes it), and, for the
few families whose smallest variant is a base-size transformer, fewer blocks
(``depth=2``: the same code, a tenth of the weights).  ``TIMM_EXCLUDED`` names the
families the zoo leaves out and why; those are limits of size or of torch, not of irvm.
"""

from __future__ import annotations

import importlib
from typing import Any

# family -> [(timm model name, image size, extra create_model arguments)]
TIMM_MODELS: dict[str, list[tuple[str, int, dict[str, Any]]]] = {
    # the first seventeen families of the zoo (names kept: their cases are cached)
    "resnet": [("resnet18", 64, {}), ("seresnext26d_32x4d", 64, {})],
    "efficientnet": [("efficientnet_b0", 64, {})],
    "mobilenetv3": [("mobilenetv3_small_100", 64, {})],
    "convnext": [("convnext_atto", 64, {})],
    "deit": [("deit_tiny_patch16_224", 64, {"img_size": 64})],
    "swin_transformer": [("swin_tiny_patch4_window7_224", 224, {})],
    "regnet": [("regnetx_002", 64, {})],
    "densenet": [("densenet121", 64, {})],
    "mlp_mixer": [("mixer_s16_224", 64, {"img_size": 64})],
    "convmixer": [("convmixer_768_32", 64, {})],
    "levit": [("levit_128s", 224, {})],
    "metaformer": [("poolformer_s12", 64, {})],
    "ghostnet": [("ghostnet_100", 64, {})],
    "mobilevit": [("mobilevit_xxs", 64, {})],
    "dla": [("dla34", 64, {})],
    "cspnet": [("cspdarknet53", 64, {})],
    # every other family, alphabetically
    "beit": [("beit_base_patch16_224", 64, {"img_size": 64, "depth": 2})],
    "byoanet": [("lambda_resnet26t", 64, {})],
    "byobnet": [("test_byobnet", 64, {})],
    "cait": [("cait_xxs24_224", 64, {"img_size": 64})],
    "coat": [("coat_tiny", 64, {"img_size": 64})],
    "convit": [("convit_tiny", 64, {"img_size": 64})],
    "cpubone": [("cpubone_nano", 64, {})],
    "crossvit": [("crossvit_tiny_240", 240, {})],
    "csatv2": [("csatv2", 64, {})],
    "cspnext": [("cspnext_tiny", 64, {})],
    "davit": [("davit_tiny", 64, {})],
    "dpn": [("dpn48b", 64, {})],
    "edgenext": [("edgenext_xx_small", 64, {})],
    "efficientformer": [("efficientformer_l1", 224, {})],
    "efficientformer_v2": [("efficientformerv2_s0", 224, {})],
    "efficientvim": [("efficientvim_m1", 64, {})],
    "efficientvit_mit": [("efficientvit_b0", 64, {})],
    "efficientvit_msra": [("efficientvit_m0", 224, {})],
    "eva": [("eva02_tiny_patch14_224", 56, {"img_size": 56})],
    "fasternet": [("fasternet_t0", 64, {})],
    "fastvit": [("fastvit_t8", 64, {})],
    "focalnet": [("focalnet_tiny_srf", 64, {})],
    "gcvit": [("gcvit_xxtiny", 224, {})],
    "gemma4_vit": [("gemma4_vit_167m", 64, {"depth": 2})],
    "hardcorenas": [("hardcorenas_a", 64, {})],
    "hgnet": [("hgnetv2_b0", 64, {})],
    "hiera": [("hiera_tiny_224", 224, {})],
    "hieradet_sam2": [("sam2_hiera_tiny", 64, {})],
    "hrnet": [("hrnet_w18_small", 64, {})],
    "iformer": [("iformer_t", 64, {})],
    "inception_next": [("inception_next_atto", 64, {})],
    "inception_resnet_v2": [("inception_resnet_v2", 96, {})],
    "inception_v3": [("inception_v3", 96, {})],
    "inception_v4": [("inception_v4", 96, {})],
    "lcnetv2": [("lcnetv2_small", 64, {})],
    "lowformer": [("lowformer_b0", 64, {})],
    "mambaout": [("test_mambaout", 64, {})],
    "maxxvit": [("test_coatnet", 64, {"img_size": 64})],
    "mvitv2": [("mvitv2_tiny", 224, {})],
    "naflexvit": [("naflexvit_base_patch16_gap", 64, {"depth": 2})],
    "nasnet": [("nasnetalarge", 96, {})],
    "nest": [("nest_tiny", 64, {"img_size": 64})],
    "nextvit": [("nextvit_small", 64, {})],
    "nfnet": [("test_nfnet", 64, {})],
    "pit": [("pit_ti_224", 64, {"img_size": 64})],
    "pnasnet": [("pnasnet5large", 96, {})],
    "pvt_v2": [("pvt_v2_b0", 64, {})],
    "qwen3_vit": [("qwen3_vit_88m", 64, {"depth": 2})],
    "rdnet": [("rdnet_tiny", 64, {})],
    "repghost": [("repghostnet_050", 64, {})],
    "repvit": [("repvit_m0_9", 64, {})],
    "res2net": [("res2next50", 64, {})],
    "resnest": [("resnest14d", 64, {})],
    "resnetv2": [("resnetv2_18", 64, {})],
    "rexnet": [("rexnet_100", 64, {})],
    "selecsls": [("selecsls42", 64, {})],
    "senet": [("legacy_seresnet18", 64, {})],
    "sequencer": [("sequencer2d_s", 64, {})],
    "shvit": [("shvit_s1", 64, {})],
    "sknet": [("skresnet18", 64, {})],
    "starnet": [("starnet_s050", 64, {})],
    "swiftformer": [("swiftformer_xs", 64, {})],
    "swin_transformer_v2": [("swinv2_tiny_window8_256", 256, {})],
    "swin_transformer_v2_cr": [("swinv2_cr_tiny_224", 224, {})],
    "tiny_vit": [("tiny_vit_5m_224", 224, {})],
    "tnt": [("tnt_s_patch16_224", 64, {"img_size": 64})],
    "tresnet": [("tresnet_m", 64, {})],
    "twins": [("twins_pcpvt_small", 64, {})],
    "vgg": [("vgg11", 64, {})],
    "visformer": [("visformer_tiny", 64, {"img_size": 64})],
    "vision_transformer": [("test_vit", 64, {"img_size": 64})],
    "vision_transformer_hybrid": [("vit_tiny_r_s16_p8_224", 64, {"img_size": 64})],
    "vision_transformer_relpos": [("test_vit_relpos", 64, {"img_size": 64})],
    "vision_transformer_sam": [("samvit_base_patch16_224", 64, {"img_size": 64, "depth": 2})],
    # 412M and 83M parameters as published: two blocks, and half the channels
    "deepseek_vit": [("deepseek_vit_412m", 56, {"img_size": 56, "depth": 2})],
    "mobilenetv5": [("mobilenetv5_base", 64, {"channel_multiplier": 0.5})],
    "vitamin": [("vitamin_small_224", 64, {"img_size": 64})],
    "volo": [("volo_d1_224", 64, {"img_size": 64})],
    "vovnet": [("ese_vovnet19b_slim_dw", 64, {})],
    "xception": [("legacy_xception", 64, {})],
    "xception_aligned": [("xception41p", 64, {})],
    "xcit": [("xcit_nano_12_p16_224", 64, {"img_size": 64})],
}

# family -> why the zoo leaves it out
TIMM_EXCLUDED: dict[str, str] = {}

# Over ~100M parameters even at their smallest: the full zoo only (``--skip-heavy`` leaves them out).
TIMM_HEAVY: frozenset[str] = frozenset({"vgg11"})


def timm_families() -> dict[str, list[str]]:
    """timm's model names grouped by the module that registers them (``resnet``: ``resnet18``...)."""
    timm = importlib.import_module("timm")
    registry = importlib.import_module("timm.models._registry")
    families: dict[str, list[str]] = {}
    for name in timm.list_models():
        module = registry.model_entrypoint(name).__module__.rsplit(".", 1)[-1]
        families.setdefault(module, []).append(name)
    return families
