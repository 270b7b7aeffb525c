#!/usr/bin/env python3
"""The hostile-input corpus through the command line, with bounded time and memory (issue 10).

Every file of tests/fuzz/corpus/ (the reproducers and the fuzzing seeds), plus large inputs
generated here at test time (16 MiB documents, deep nesting, 80,000-key objects, huge arrays and
lists, invalid UTF-8, the largest valid sizes), goes to `memfit --config FILE --json` and
`memfit --hf-config FILE --json`. Each run must end with exit status 0 (answered) or 2 (refused
with a message), within CPU_LIMIT_S of CPU time and under RSS_LIMIT_BYTES of peak memory
(DESIGN.md: "any input up to 16 MiB answered in under 1 s and 256 MiB"), and everything it
prints must be valid UTF-8.

Time is measured as the child's own CPU time (os.wait4), not wall-clock time, and the bound is
twice the design's 1 s, so a loaded machine does not make the test flaky; the inputs it guards
against took 2 s to 44 s and up to 1.45 GB before the fixes.

usage: hostile_corpus.py --memfit build/cli/memfit [--verbose]
"""
import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "fuzz" / "corpus"
MIB = 1 << 20
MAX_DOCUMENT_BYTES = 16 * MIB  # the reader's limit (core/include/memfit/json.hpp)
MAX_VALUES = 200_000  # the reader's value cap
CPU_LIMIT_S = 2.0
RSS_LIMIT_BYTES = 256 * MIB
HANG_LIMIT_S = 60  # a run past this is killed and reported as a hang


def pad_to(text: str, size: int) -> str:
    """`text` followed by spaces up to exactly `size` bytes (JSON allows trailing whitespace)."""
    data = text.encode()
    assert len(data) <= size, (len(data), size)
    return text + " " * (size - len(data))


def qwen2_moe(layers, mlp_only_layers):
    return {"model_type": "qwen2_moe", "vocab_size": 1000, "hidden_size": 64, "num_hidden_layers": layers,
            "num_attention_heads": 4, "intermediate_size": 128, "num_experts": 4, "num_experts_per_tok": 2,
            "moe_intermediate_size": 32, "mlp_only_layers": mlp_only_layers}


def generated_inputs():
    """(name, bytes) of each large or hostile input, built here rather than committed."""
    full = MAX_DOCUMENT_BYTES
    keys_80k = {f"k{i}": i for i in range(80_000)}
    inputs = {
        # Size: the largest accepted document of each shape, and one byte over the limit.
        "over_16mib": pad_to("{}", full + 1),
        "string_16mib": '"' + "a" * (full - 2) + '"',
        "preset_string_16mib": '{"model":{"preset":"' + "a" * (full - 22) + '"}}',
        "model_type_string_16mib": '{"model_type":"' + "a" * (full - 17) + '"}',
        "whitespace_16mib": pad_to("{}", full),
        "digits_16mib": "1" * full,
        "fraction_16mib": "0." + "1" * (full - 2),
        "exponent_16mib": "1e" + "1" * (full - 2),
        "escapes_16mib": '"' + "\\u00e9" * ((full - 2) // 6) + '"',
        # Nesting.
        "arrays_deep_16mib": "[" * full,
        "objects_deep": '{"a":' * 1_000_000,
        "nested_at_limit": "[" * 64 + "]" * 64,
        # Counts: objects and arrays up to and past the value cap.
        "keys_80k": json.dumps(keys_80k),
        "keys_80k_in_model": json.dumps({"model": keys_80k}),
        "keys_80k_in_training": json.dumps({"training": keys_80k, "parallel": keys_80k}),
        "keys_at_value_cap": json.dumps({f"{i:x}": 0 for i in range(MAX_VALUES - 1)}, separators=(",", ":")),
        # Each unknown key comes back as a warning naming it: the most the command line says back.
        "long_keys_at_value_cap_16mib": json.dumps({f"{i:075x}": 0 for i in range(MAX_VALUES - 1)},
                                                   separators=(",", ":")),
        "repeated_key_16mib": "{" + ",".join(['"a":0'] * ((full - 2) // 6)) + "}",
        "zeros_16mib": "[" + ",".join(["0"] * ((full - 2) // 2)) + "]",
        "zeros_10mb": "[" + ",".join(["0"] * 5_000_000) + "]",
        "zeros_at_value_cap": "[" + ",".join(["0"] * (MAX_VALUES - 1)) + "]",
        "strings_16mib": "[" + ",".join(['"a"'] * ((full - 2) // 4)) + "]",
        "empty_arrays_16mib": "[" + ",".join(["[]"] * ((full - 2) // 3)) + "]",
        "empty_objects_16mib": "[" + ",".join(["{}"] * ((full - 2) // 3)) + "]",
        "lora_targets_at_value_cap": json.dumps({"training": {"finetune": {"method": "lora",
                                                                           "lora_targets": ["q"] * (MAX_VALUES - 10)}}}),
        # Hugging Face lists and counts.
        "mlp_only_layers_at_value_cap": json.dumps(qwen2_moe(100_000, list(range(MAX_VALUES - 20)))),
        "mlp_only_layers_every_layer": json.dumps(qwen2_moe(100_000, list(range(100_000)))),
        "num_hidden_layers_list": json.dumps({"model_type": "llama", "num_hidden_layers": list(range(500_000))}),
        # The largest valid sizes: answered, with finite numbers.
        "largest_layer_count": json.dumps({"model": {"preset": "llama-3-8b", "num_hidden_layers": 100_000}}),
        "largest_moe": json.dumps({"model": {"preset": "llama-3-8b", "num_hidden_layers": 100_000,
                                             "num_experts": 100_000, "num_experts_per_tok": 100_000,
                                             "moe_intermediate_size": 1000}}),
        "largest_run": json.dumps({"training": {"micro_batch_size": 1_000_000, "seq_len": 100_000_000},
                                   "parallel": {"num_gpus": 1024, "zero_stage": 3}}),
        "largest_hf_layers": json.dumps(qwen2_moe(100_000, [])),
    }
    out = [(name, text.encode()) for name, text in inputs.items()]
    del inputs
    # Invalid UTF-8: in a value the core would echo, in a key, in a Hugging Face model_type, raw.
    out += [
        ("utf8_in_preset", b'{"model":{"preset":"\xff\xfe"}}'),
        ("utf8_in_key", b'{"model":{"\xc0\xaf":1}}'),
        ("utf8_in_model_type", b'{"model_type":"llama\xed\xa0\x80"}'),
        ("utf8_overlong_16mib", b'"' + b"\xc0\xaf" * ((full - 2) // 2) + b'"'),
        ("utf8_raw_bytes", bytes(range(256))),
        ("utf8_truncated", b'{"model":{"preset":"\xe2\x82'),
    ]
    return out


def measure(memfit, flag, path, out_path, err_path):
    """In a small process of its own: runs one CLI call and prints its status and resource use.

    Linux carries a process's peak memory across fork and exec (ru_maxrss starts from the
    parent's size), so the CLI is started from this fresh, small interpreter rather than from the
    test runner, which holds the generated inputs."""
    def limits():
        resource.setrlimit(resource.RLIMIT_CPU, (HANG_LIMIT_S, HANG_LIMIT_S + 5))

    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        proc = subprocess.Popen([memfit, flag, path, "--json"], stdout=out, stderr=err,
                                stdin=subprocess.DEVNULL, preexec_fn=limits)
        timer = threading.Timer(HANG_LIMIT_S, proc.kill)
        timer.start()
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        finally:
            timer.cancel()
    # ru_maxrss is in KiB on Linux (bytes on macOS).
    rss = usage.ru_maxrss * (1 if sys.platform == "darwin" else 1024)
    print(json.dumps({"status": os.waitstatus_to_exitcode(status), "cpu_s": usage.ru_utime + usage.ru_stime,
                      "rss_bytes": rss}))


def run(memfit, flag, path, tmp):
    """One CLI call, measured: (status, cpu_s, max_rss_bytes, stdout path, stderr path)."""
    out_path, err_path = Path(tmp) / "stdout", Path(tmp) / "stderr"
    report = subprocess.run([sys.executable, __file__, "--measure", memfit, flag, str(path), str(out_path),
                             str(err_path)], capture_output=True, text=True, check=True)
    r = json.loads(report.stdout)
    return r["status"], r["cpu_s"], r["rss_bytes"], out_path, err_path


def is_utf8(path):
    """Whether a file holds UTF-8, read in pieces so that the runner stays small."""
    import codecs
    decoder = codecs.getincrementaldecoder("utf-8")()
    try:
        with open(path, "rb") as f:
            while chunk := f.read(1 << 20):
                decoder.decode(chunk)
        decoder.decode(b"", final=True)
        return True
    except UnicodeDecodeError:
        return False


def finite_json_problem(path):
    """None when the file is JSON with only finite numbers, else what is wrong."""
    def refuse(constant):
        raise ValueError(f"{constant} in the output")
    try:
        with open(path, "rb") as f:
            json.load(f, parse_constant=refuse)
        return None
    except ValueError as e:
        return str(e)[:200]


def tail(path, size=300):
    with open(path, "rb") as f:
        f.seek(max(0, os.path.getsize(path) - size))
        return f.read().decode(errors="replace")


def main():
    if len(sys.argv) == 7 and sys.argv[1] == "--measure":
        measure(*sys.argv[2:])
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memfit", required=True, help="path to the memfit command line")
    parser.add_argument("--verbose", action="store_true", help="one line per run")
    args = parser.parse_args()
    memfit = str(Path(args.memfit).resolve())

    failures = []
    runs = inputs = 0
    worst_cpu = worst_rss = (0, "")
    with tempfile.TemporaryDirectory(prefix="memfit-hostile-") as tmp:
        path = Path(tmp) / "input"
        sources = [(p.name, p.read_bytes()) for p in sorted(CORPUS.iterdir()) if p.is_file()]
        for name, data in sources + generated_inputs():
            path.write_bytes(data)
            inputs += 1
            for flag in ("--config", "--hf-config"):
                status, cpu_s, rss, out, err = run(memfit, flag, path, tmp)
                runs += 1
                label = f"{flag} {name} ({len(data):,} bytes)"
                worst_cpu = max(worst_cpu, (cpu_s, label))
                worst_rss = max(worst_rss, (rss, label))
                if args.verbose:
                    print(f"  {status:3d} {cpu_s:6.2f} s {rss / MIB:7.1f} MiB  {label}")
                problems = []
                if status not in (0, 2):
                    problems.append(f"exit status {status}: {tail(err)}")
                if cpu_s > CPU_LIMIT_S:
                    problems.append(f"{cpu_s:.2f} s of CPU (limit {CPU_LIMIT_S} s)")
                if rss > RSS_LIMIT_BYTES:
                    problems.append(f"{rss / MIB:.1f} MiB peak memory (limit {RSS_LIMIT_BYTES // MIB} MiB)")
                if not is_utf8(out) or not is_utf8(err):
                    problems.append("printed bytes that are not UTF-8")
                if status == 0 and (problem := finite_json_problem(out)):
                    problems.append(f"--json output is not JSON with finite numbers: {problem}")
                if problems:
                    failures.append(f"{label}: " + "; ".join(problems))

    print(f"hostile corpus: {runs} runs over {inputs} inputs; most CPU {worst_cpu[0]:.2f} s ({worst_cpu[1]}); "
          f"most memory {worst_rss[0] / MIB:.1f} MiB ({worst_rss[1]})")
    for failure in failures:
        print("FAIL", failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
