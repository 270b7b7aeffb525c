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
