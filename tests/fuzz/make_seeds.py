#!/usr/bin/env python3
"""Writes the fuzzer's Hugging Face seeds: one config.json per family the importer knows.

Each family's seed is the first fixture in tests/fixtures/hf/ with that model_type. A family
without a fixture (qwen3, deepseek_v2) gets the fixture of the family sharing the longest prefix
with it (qwen3_moe, deepseek_v3), renamed; the families checked on another family's file in
tools/frameworks/families.py take that file, as families.py does (SHAPES). The family list is the importer's own, read from the
command line's message for an unknown model_type. Fails when a family is left without a seed.

usage: make_seeds.py --memfit build/cli/memfit OUT_DIR
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "hf"
# Families without a file of their own: the family whose file they are read on, and the keys set.
SHAPES = {
    "arcee": ("llama", {"hidden_act": "relu2"}),
    "nemotron": ("llama", {"hidden_act": "relu2"}),
    "apertus": ("llama", {"hidden_act": "xielu"}),
}


def supported_families(memfit):
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump({"model_type": "?"}, f)
    try:
        err = subprocess.run([memfit, "--hf-config", f.name], capture_output=True, text=True).stderr
    finally:
        os.unlink(f.name)
    marker = "supported: "
    assert marker in err, f"unexpected message from memfit: {err!r}"
    return err.split(marker, 1)[1].strip().split(", ")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memfit", required=True)
    parser.add_argument("out_dir", type=Path)
    args = parser.parse_args()

    by_family = {}
    for path in sorted(FIXTURES.glob("*.json")):
        config = json.loads(path.read_text())
        by_family.setdefault(config.get("model_type"), config)
    args.out_dir.mkdir(parents=True, exist_ok=True)
    missing = []
    for family in supported_families(args.memfit):
        if family in by_family:
            config = by_family[family]
        elif family in SHAPES and SHAPES[family][0] in by_family:
            donor, keys = SHAPES[family]
            config = dict(by_family[donor], model_type=family, **keys)
        else:
            donors = [f for f in by_family if isinstance(f, str)]
            donor = max(donors, key=lambda f: len(os.path.commonprefix([f, family])))
            if not os.path.commonprefix([donor, family]):
                missing.append(family)
                continue
            config = dict(by_family[donor], model_type=family)
        seed = args.out_dir / f"hf-{family}.json"
        seed.write_text(json.dumps(config, indent=1))
        # A seed the importer accepts leads the fuzzer past the family's checks into the counts.
        if subprocess.run([args.memfit, "--hf-config", str(seed), "--json"], capture_output=True).returncode != 0:
            missing.append(family + " (its seed is refused)")
    if missing:
        print("no fuzzing seed for model_type " + ", ".join(missing), file=sys.stderr)
        return 1
    print(f"fuzzing seeds: one config.json for each of {len(list(args.out_dir.glob('hf-*.json')))} families")
    return 0


if __name__ == "__main__":
    sys.exit(main())
