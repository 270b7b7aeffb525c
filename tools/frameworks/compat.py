"""Version workarounds shared by the tools/frameworks scripts."""


def peft_without_torchao():
    """peft 0.21 refuses to work when torchao < 0.16 is installed (peft/import_utils.py
    is_torchao_available raises ImportError), while torchtune 0.6.1 needs torchao < 0.14
    (it imports torchao.dtypes.nf4tensor, removed in 0.14). torchao only matters to peft
    for torchao-quantized base layers, which nothing here uses: tell peft it is absent."""
    import sys
    import peft  # noqa: F401  (imports the tuners, which bind the function by name)
    import peft.import_utils as iu
    orig = iu.is_torchao_available

    def absent():
        return False
    for name, mod in list(sys.modules.items()):
        if name.startswith("peft") and getattr(mod, "is_torchao_available", None) is orig:
            mod.is_torchao_available = absent


def register_causal_lms():
    """transformers 5.24 maps some decoder-only classes to no AutoModelForCausalLM entry (Mistral 4:
    Mistral4ForCausalLM exists, its config is registered only under the multimodal Mistral 3): map
    them here, so that from_config builds them as transformers' own class."""
    import transformers
    from transformers import AutoModelForCausalLM
    for config, model in (("Mistral4Config", "Mistral4ForCausalLM"),):
        cfg, cls = getattr(transformers, config, None), getattr(transformers, model, None)
        if cfg is not None and cls is not None:
            AutoModelForCausalLM.register(cfg, cls, exist_ok=True)
