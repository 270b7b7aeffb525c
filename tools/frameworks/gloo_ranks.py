"""What the two-rank gloo measurements share (fsdp1_units.py, fsdp2_4bit.py, accelerate_upcast.py):
the tiny Llama they build, its PEFT targets, and running a worker on every rank and reading back
what rank 0 wrote."""

import json
import os
import tempfile

WORLD = 2
MODEL = {"vocab_size": 256, "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
         "num_attention_heads": 4, "num_key_value_heads": 4}
LORA_RANK, LORA_TARGETS = 4, ["q_proj", "v_proj"]
IA3_TARGETS = ["k_proj", "v_proj", "down_proj"]


def run_ranks(worker, port, *args):
    """torch.multiprocessing.spawn(worker) on WORLD ranks with (rank, port, *args, path); rank 0 writes
    its JSON to `path`, which is returned parsed."""
    import torch
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "r.json")
        torch.multiprocessing.spawn(worker, args=(port, *args, path), nprocs=WORLD)
        with open(path) as f:
            return json.load(f)


def write_result(path, out):
    """The measurement's JSON, as every tool here writes it (indented, a final newline)."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")
