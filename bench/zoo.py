"""Public models nobody here wrote, built from small configs with random weights (nothing is downloaded):
torchvision's ResNet-18, MobileNetV3-Small and ShuffleNetV2 x0.5, timm's ViT-Tiny, and transformers' BERT and
GPT-2. ``bench/models.py`` times them beside the six workloads; ``tests/python/test_zoo.py`` checks neoflow's
results against eager's.

Each model is built in float32 with its dropout off (so that two runs compute the same thing), for a batch of
2: 64x64 images with 10 classes, or 32 tokens of a 1,000-word vocabulary. ``make(name)`` returns the model and
its inputs, ``loss(name, model, inputs)`` the training loss. The packages come from PyPI (``scripts/env.sh``
installs them, pinned); ``missing()`` names those not installed.
"""

from __future__ import annotations

import importlib.util

import torch

BATCH = 2
IMAGE = 64
TOKENS = 32
VOCAB = 1000
CLASSES = 10

# name -> (package, what it is)
MODELS = {
    "resnet18": ("torchvision", "torchvision ResNet-18"),
    "mobilenet_v3_small": ("torchvision", "torchvision MobileNetV3-Small"),
    "shufflenet_v2_x0_5": ("torchvision", "torchvision ShuffleNetV2 x0.5"),
    "vit_tiny": ("timm", "timm vit_tiny_patch16_224 at 64x64"),
    "bert": ("transformers", "transformers BertForSequenceClassification, hidden 128, 2 layers"),
    "gpt2": ("transformers", "transformers GPT2LMHeadModel, n_embd 128, 2 layers"),
}


def missing() -> list[str]:
    """The zoo's packages that are not installed."""
    return sorted({pkg for pkg, _ in MODELS.values() if importlib.util.find_spec(pkg) is None})


def _no_dropout(model: torch.nn.Module) -> torch.nn.Module:
    for m in model.modules():
        if isinstance(m, torch.nn.Dropout):
            m.p = 0.0
    return model


def _vision(name: str) -> torch.nn.Module:
    if name == "vit_tiny":
        import timm

        return timm.create_model("vit_tiny_patch16_224", pretrained=False, img_size=IMAGE, num_classes=CLASSES)
    import torchvision

    return getattr(torchvision.models, name)(weights=None, num_classes=CLASSES)


def _text(name: str) -> torch.nn.Module:
    import transformers

    if name == "bert":
        cfg = transformers.BertConfig(
            vocab_size=VOCAB,
            hidden_size=128,
            num_hidden_layers=2,
            num_attention_heads=2,
            intermediate_size=512,
            max_position_embeddings=64,
            hidden_dropout_prob=0.0,
            attention_probs_dropout_prob=0.0,
            num_labels=2,
        )
        return transformers.BertForSequenceClassification(cfg)
    cfg = transformers.GPT2Config(
        vocab_size=VOCAB,
        n_embd=128,
        n_layer=2,
        n_head=2,
        n_positions=64,
        resid_pdrop=0.0,
        embd_pdrop=0.0,
        attn_pdrop=0.0,
        bos_token_id=0,
        eos_token_id=0,
    )
    return transformers.GPT2LMHeadModel(cfg)


def make(name: str, seed: int = 0) -> tuple[torch.nn.Module, dict]:
    """Model name (of MODELS), in training mode, and its inputs: images and labels, or tokens and labels."""
    if name not in MODELS:
        raise ValueError(f"unknown zoo model {name!r}; the zoo: {', '.join(MODELS)}")
    if MODELS[name][0] in missing():
        raise ImportError(f"zoo model {name} needs {MODELS[name][0]}, which scripts/env.sh installs")
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    if name in ("bert", "gpt2"):
        model = _text(name)
        tokens = torch.randint(0, VOCAB, (BATCH, TOKENS), generator=gen)
        labels = torch.randint(0, 2, (BATCH,), generator=gen) if name == "bert" else tokens
        inputs = {"tokens": tokens, "labels": labels}
    else:
        model = _vision(name)
        inputs = {
            "images": torch.randn(BATCH, 3, IMAGE, IMAGE, generator=gen),
            "labels": torch.randint(0, CLASSES, (BATCH,), generator=gen),
        }
    return _no_dropout(model).train(), inputs


def loss(name: str, model: torch.nn.Module, inputs: dict) -> torch.Tensor:
    """The training loss of model on inputs: cross entropy of the classes, or of the next tokens for GPT-2."""
    if name in ("bert", "gpt2"):
        return model(input_ids=inputs["tokens"], labels=inputs["labels"]).loss
    return torch.nn.functional.cross_entropy(model(inputs["images"]), inputs["labels"])
