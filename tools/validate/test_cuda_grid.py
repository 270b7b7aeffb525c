"""Tests of the real-GPU harness (cuda_grid.py) that run without a GPU.

    /usr/bin/python3 -m unittest discover -s tools/validate -p 'test_cuda_grid.py'
    MEMFIT_HF_PYTHON=.venv-frameworks/bin/python /usr/bin/python3 -m unittest discover -s tools/validate -p 'test_cuda_grid.py'

Three layers:
* Plan (standard library + the memfit binary, so CI runs them under Debian's python3): the grid's
  coverage, its estimated run time, GPU-name mapping, memfit accepting every configuration with no
  unknown field and counting exactly the parameters transformers + peft build
  (fixtures/cuda_grid_counts.json), the --reuse path on a synthetic measurement.
* InProcess (needs torch + transformers + peft in the running interpreter): the dry run on the meta
  device (every model built, every count exact, the counts fixture current), the real step loop
  on the CPU with tiny models (parameters, gradients and AdamW states exact against memfit), and the
  CUDA record assembly with a stand-in for torch.cuda.
* ViaHfInterpreter: runs InProcess with another interpreter when this one lacks transformers:
  $MEMFIT_HF_PYTHON, else .venv-frameworks/bin/python at the repository root
  (tools/frameworks/setup_venv.sh makes it); skipped, saying so, when there is none.
"""

import contextlib
import io
import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)

import cuda_grid  # noqa: E402

MEMFIT = os.path.join(ROOT, "build", "cli", "memfit")
HAVE_MEMFIT = os.path.isfile(MEMFIT) and os.access(MEMFIT, os.X_OK)


def _has_hf(python):
    try:
        p = subprocess.run([python, "-c", "import torch, transformers, peft"], capture_output=True, timeout=300)
        return p.returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


HF_HERE = _has_hf(sys.executable)


def hf_interpreter():
    for cand in (os.environ.get("MEMFIT_HF_PYTHON"), os.path.join(ROOT, ".venv-frameworks", "bin", "python")):
        if cand and os.path.isfile(cand) and os.access(cand, os.X_OK) and _has_hf(cand):
            return cand
    return None


def runnable(cases):
    return [c for c in cases if not c["requires"]]


class Plan(unittest.TestCase):
    def setUp(self):
        self.cases = cuda_grid.grid()

    def test_at_least_40_configurations_need_no_optional_package(self):
        self.assertGreaterEqual(len(runnable(self.cases)), 40)
        self.assertEqual(len({c["name"] for c in self.cases}), len(self.cases))

    def test_every_axis_is_covered(self):
        ax = cuda_grid.axis_counts(self.cases)
        self.assertEqual(set(ax["family"]), {"llama", "mistral", "qwen2", "gpt2", "mixtral", "deepseek_v3", "gpt_oss"})
        self.assertEqual(set(ax["precision"]), {"fp32", "bf16_mixed", "bf16_autocast", "bf16"})
        self.assertEqual(set(ax["attention"]), {"eager", "sdpa", "flash_attention_2"})
        self.assertEqual(set(ax["checkpointing"]), {"full", "none"})
        self.assertEqual(set(ax["optimizer"]), {"adamw foreach", "adamw fused"})
        for ft in ("lora r8 qv", "lora r64 all", "qlora r8 qv", "qlora r64 all"):
            self.assertIn(ft, ax["finetune"])
        self.assertGreaterEqual(len(ax["batch x seq"]), 5)
        self.assertIn("0.1", ax["dropout"])
        # each family runs in at least two precisions and with both eager and sdpa
        for fam in ("llama", "mistral", "qwen2", "gpt2", "mixtral"):
            mine = [c for c in runnable(self.cases) if c["family"] == fam]
            self.assertGreaterEqual(len({c["precision"] for c in mine}), 2, fam)
            self.assertEqual({c["attention"] for c in mine}, {"eager", "sdpa"}, fam)

    def test_estimated_time_fits_the_budget(self):
        for gpu in cuda_grid.THROUGHPUT:
            total = cuda_grid.STARTUP_S + sum(cuda_grid.estimate_seconds(c, gpu) for c in self.cases)
            self.assertLess(total, cuda_grid.DEFAULT_TIME_BUDGET_S, gpu)
        self.assertLess(cuda_grid.DEFAULT_TIME_BUDGET_S, 8 * 60)

    def test_flops(self):
        c = cuda_grid.case("llama", "bf16", "sdpa", 4, 1024)
        n_matmul = 491816960 - 32000 * 2048          # every weight but the input embedding
        fwd = 2 * 4096 * n_matmul
        self.assertAlmostEqual(cuda_grid.step_flops(c) / (3 * fwd), 1.0, delta=0.15)
        ck = cuda_grid.case("llama", "bf16", "sdpa", 4, 1024, ckpt=True)
        self.assertGreater(cuda_grid.step_flops(ck), cuda_grid.step_flops(c))

    def test_gpu_names(self):
        table = cuda_grid.parse_list_gpus(
            "a100-40gb          NVIDIA A100 40GB                        40.00 GiB\n"
            "a100-80gb          NVIDIA A100 80GB                        80.00 GiB\n"
            "h100-sxm-80gb      NVIDIA H100 SXM 80GB                    79.65 GiB\n"
            "h200-141gb         NVIDIA H200 141GB                      140.40 GiB\n"
            "v100-16gb          NVIDIA V100 16GB                        16.00 GiB\n"
            "v100-32gb          NVIDIA V100 32GB                        32.00 GiB\n")
        self.assertEqual(len(table), 6)
        G = 1024 ** 3
        cases = [("NVIDIA H100 80GB HBM3", 80 * G, "h100-sxm-80gb"), ("NVIDIA H100 PCIe", 80 * G, "h100-pcie-80gb"),
                 ("NVIDIA H200", 141 * G, "h200-141gb"), ("NVIDIA H200 NVL", 141 * G, "h200-141gb"),
                 ("NVIDIA A100-SXM4-80GB", 80 * G, "a100-80gb"), ("NVIDIA A100 80GB PCIe", 80 * G, "a100-80gb"),
                 ("NVIDIA A100-SXM4-40GB", 40 * G, "a100-40gb"), ("NVIDIA A100-PCIE-40GB", 40 * G, "a100-40gb"),
                 ("Tesla V100-SXM2-32GB", 32 * G, "v100-32gb"), ("Tesla V100-SXM2-16GB", 16 * G, "v100-16gb"),
                 ("Tesla T4", 15 * G, "t4-16gb"), ("NVIDIA L4", 22 * G, "l4-24gb"), ("NVIDIA L40S", 45 * G, "l40s-48gb"),
                 ("NVIDIA A10G", 22 * G, "a10g-24gb"), ("NVIDIA GeForce RTX 4090", 24 * G, "rtx-4090-24gb"),
                 ("NVIDIA RTX A6000", 48 * G, "rtx-a6000-48gb"), ("NVIDIA B200", 180 * G, "b200-180gb")]
        for name, mem, want in cases:
            self.assertEqual(cuda_grid.gpu_id_for(name, mem, table), want, name)
        self.assertEqual(cuda_grid.gpu_id_for("Some Future GPU", 139 * G, table), "h200-141gb")
        self.assertEqual(cuda_grid.gpu_id_for("Some Future GPU"), cuda_grid.DEFAULT_GPU)

    @unittest.skipUnless(HAVE_MEMFIT, "build/cli/memfit is not built")
    def test_gpu_ids_exist_in_memfit(self):
        out = subprocess.run([MEMFIT, "--list-gpus"], capture_output=True, text=True, check=True).stdout
        ids = {g for g, _ in cuda_grid.parse_list_gpus(out)}
        for _, gid in cuda_grid.GPU_PATTERNS:
            if gid:
                self.assertIn(gid, ids)

    @unittest.skipUnless(HAVE_MEMFIT, "build/cli/memfit is not built")
    def test_memfit_accepts_every_configuration_and_counts_like_transformers(self):
        with open(cuda_grid.COUNTS_FIXTURE) as f:
            fixture = json.load(f)["configurations"]
        self.assertEqual(set(fixture), {c["name"] for c in self.cases},
                         "the grid changed: regenerate with cuda_grid.py --dry-run --write-counts")
        configs = [cuda_grid.memfit_config(c, "h100-sxm-80gb")[0] for c in self.cases]
        results = cuda_grid.memfit_batch(MEMFIT, configs)
        for c, r in zip(self.cases, results):
            with self.subTest(c["name"]):
                self.assertTrue(r["ok"], r.get("errors"))
                self.assertEqual(cuda_grid.unknown_fields(r), [])
                self.assertEqual(r["parameter_count"], fixture[c["name"]]["parameter_count"])
                self.assertEqual(r["trainable_parameter_count"], fixture[c["name"]]["trainable_parameter_count"])
                # an 80 GB card runs every configuration, by memfit's own estimate
                self.assertLess(r["peak_reserved_bytes"], 70 * 1024 ** 3)

    @unittest.skipUnless(HAVE_MEMFIT, "build/cli/memfit is not built")
    def test_reuse_adds_memfit_to_a_measurement(self):
        cases = [c for c in self.cases if c["name"] in ("llama-bf16-sdpa-b4t1024", "gpt2-fp32-eager-b8t1024")]
        G = 1024 ** 3
        entries = []
        for c in cases:
            cfg, knobs = cuda_grid.memfit_config(c, "a100-80gb")
            meas = {"parameter_count": 1, "trainable_parameter_count": 1, "parameter_bytes": 2 * G,
                    "gradient_bytes": 2 * G, "optimizer_state_bytes": 4 * G, "load": {"peak_allocated_bytes": G},
                    "step": {"forward": {"peak_allocated_bytes": 9 * G}, "backward": {"peak_allocated_bytes": 10 * G},
                             "optimizer_step": {"peak_allocated_bytes": 8 * G}},
                    "peak_allocated_bytes": 10 * G, "peak_reserved_bytes": 11 * G, "device_used_bytes": 12 * G}
            entries.append({"name": c["name"], "case": c, "memfit_config": cfg, "knobs": knobs, "status": "measured",
                            "measured": meas})
        entries.append({"name": "skipped-one", "case": self.cases[-1], "status": "skipped", "reason": "needs x",
                        "memfit_config": cuda_grid.memfit_config(self.cases[-1], "a100-80gb")[0]})
        doc = {"environment": {"gpu_name": "NVIDIA H200", "versions": {}}, "memfit_gpu": "h200-141gb",
               "configurations": entries, "counts": {"measured": 2, "skipped": 1, "oom": 0, "error": 0}}
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "cuda_grid.json")
            with open(path, "w") as f:
                json.dump(doc, f)
            with contextlib.redirect_stdout(io.StringIO()):
                rc = cuda_grid.main(["--reuse", path, "--memfit", MEMFIT])
            self.assertEqual(rc, 0)
            with open(path) as f:
                out = json.load(f)
            with open(os.path.join(tmp, "cuda_grid.md")) as f:
                md = f.read()
        e = out["configurations"][0]
        self.assertEqual(e["memfit_config"]["hardware"]["gpu"], "h200-141gb")
        cmp_ = e["comparison"]["peak_allocated_bytes"]
        self.assertEqual(cmp_["measured"], 10 * G)
        self.assertAlmostEqual(cmp_["relative_error"], (cmp_["memfit"] - 10 * G) / (10 * G), places=4)
        self.assertEqual(out["summary"]["peak_allocated_bytes"]["n"], 2)
        self.assertIn("llama-bf16-sdpa-b4t1024", md)
        self.assertIn("skipped: needs x", md)
        self.assertEqual(out["configurations"][2].get("comparison"), {})

    def test_reuse_without_memfit_is_a_usage_error(self):
        with contextlib.redirect_stderr(io.StringIO()):
            self.assertEqual(cuda_grid.main(["--reuse", "x.json", "--memfit", "/nonexistent/memfit"]), 2)


class FakeCuda(object):
    """Stands in for torch.cuda's statistics: every reading is a new, larger number."""
    cuda = True

    def __init__(self):
        self.n = 0
        self.resets = 0

    def _next(self):
        self.n += 1000
        return self.n

    def sync(self):
        pass

    def empty_cache(self):
        pass

    def reset(self):
        self.resets += 1

    def allocated(self):
        return self._next()

    def reserved(self):
        return self._next()

    def peak(self):
        return {"peak_allocated_bytes": self._next(), "peak_reserved_bytes": self._next(),
                "allocated_after_bytes": self._next()}

    def stats(self):
        return {"segment.all.current": 3}

    def device_used(self):
        return 7


@unittest.skipUnless(HF_HERE, "needs torch + transformers + peft in this interpreter (see ViaHfInterpreter)")
class InProcess(unittest.TestCase):
    def test_dry_run(self):
        with tempfile.TemporaryDirectory() as tmp:
            buf = io.StringIO()
            with contextlib.redirect_stdout(buf):
                rc = cuda_grid.main(["--dry-run", "--out-dir", tmp] + (["--memfit", MEMFIT] if HAVE_MEMFIT else
                                                                       ["--no-memfit"]))
            self.assertEqual(rc, 0, buf.getvalue()[-3000:])
            with open(os.path.join(tmp, "cuda_grid_plan.json")) as f:
                plan = json.load(f)
        self.assertEqual(plan["problems"], [])
        self.assertEqual(len(plan["configurations"]), len(cuda_grid.grid()))
        with open(cuda_grid.COUNTS_FIXTURE) as f:
            fixture = json.load(f)["configurations"]
        for r in plan["configurations"]:
            name = r["case"]["name"]
            self.assertEqual(fixture[name], {"parameter_count": r["parameter_count"],
                                             "trainable_parameter_count": r["trainable_parameter_count"]},
                             "%s: regenerate the fixture (cuda_grid.py --dry-run --write-counts)" % name)
            if HAVE_MEMFIT:
                self.assertEqual(r["memfit"]["parameter_count"], r["parameter_count"], name)
                self.assertEqual(r["memfit"]["trainable_parameter_count"], r["trainable_parameter_count"], name)
                self.assertEqual(r["memfit"]["unknown_fields"], [], name)
        self.assertLess(plan["estimated_seconds_all"]["a100"], 8 * 60)

    def test_cpu_smoke_states_exact(self):
        only = ("llama-bf16_mixed-sdpa-b4t1024-lora64all-ckpt,llama-bf16-sdpa-b4t1024-fused,"
                "gpt2-bf16_mixed-eager-b8t1024,mixtral-bf16_mixed-sdpa-b4t1024-lora8qv,"
                "qwen2-bf16_autocast-sdpa-b2t2048,llama-fp32-sdpa-b4t1024-lora8qv,llama-bf16-sdpa-b4t1024-lora8qv")
        with tempfile.TemporaryDirectory() as tmp:
            buf = io.StringIO()
            with contextlib.redirect_stdout(buf):
                rc = cuda_grid.main(["--cpu-smoke", "--only", only, "--out-dir", tmp] +
                                    (["--memfit", MEMFIT] if HAVE_MEMFIT else ["--no-memfit"]))
            self.assertEqual(rc, 0, buf.getvalue()[-3000:])
            with open(os.path.join(tmp, "cuda_grid.json")) as f:
                doc = json.load(f)
        self.assertEqual(doc["counts"]["measured"], 7)
        for e in doc["configurations"]:
            m = e["measured"]
            self.assertEqual(len(m["steps"]), 3)
            self.assertTrue(all(s["loss"] == s["loss"] for s in m["steps"]))     # no NaN
            if HAVE_MEMFIT:
                for k in ("parameter_count", "trainable_parameter_count", "parameter_bytes", "gradient_bytes",
                          "optimizer_state_bytes"):
                    self.assertEqual(e["comparison"][k]["relative_error"], 0, "%s %s" % (e["name"], k))
        lora = [e for e in doc["configurations"] if e["name"] == "llama-bf16_mixed-sdpa-b4t1024-lora64all-ckpt"][0]
        self.assertEqual(lora["measured"]["parameter_dtypes"], ["bfloat16", "float32:trainable"])
        pure = [e for e in doc["configurations"] if e["name"] == "llama-bf16-sdpa-b4t1024-lora8qv"][0]
        self.assertEqual(pure["measured"]["parameter_dtypes"], ["bfloat16", "bfloat16:trainable"])

    def test_cuda_record_assembly(self):
        c = cuda_grid.case("llama", "bf16_mixed", "sdpa", 4, 1024, ckpt=True)
        fake = FakeCuda()
        rec = cuda_grid.run_steps(c, "cpu", tiny=True, probe=fake)
        self.assertEqual(len(rec["steps"]), 3)
        for s in rec["steps"]:
            self.assertEqual(s["peak_allocated_bytes"], max(s[p]["peak_allocated_bytes"]
                                                            for p in ("forward", "backward", "optimizer_step")))
            self.assertEqual(s["peak_reserved_bytes"], max(s[p]["peak_reserved_bytes"]
                                                           for p in ("forward", "backward", "optimizer_step")))
            self.assertEqual(s["memory_stats"], {"segment.all.current": 3})
            # each phase starts from reset peak statistics
            self.assertLess(s["forward"]["peak_allocated_bytes"], s["backward"]["peak_allocated_bytes"])
        self.assertIs(rec["step"], rec["steps"][-1])
        self.assertEqual(rec["peak_allocated_bytes"], rec["steps"][-1]["peak_allocated_bytes"])
        self.assertEqual(rec["device_used_bytes"], 7)
        self.assertIn("leaked_bytes", rec)
        self.assertGreaterEqual(fake.resets, 1 + 3 * 4)
        self.assertGreater(rec["gradient_bytes"], 0)
        self.assertEqual(rec["optimizer_state_bytes"], 2 * rec["gradient_bytes"])   # fp32 exp_avg + exp_avg_sq


class ViaHfInterpreter(unittest.TestCase):
    def test_in_process_tests_under_an_interpreter_with_transformers(self):
        if HF_HERE:
            self.skipTest("this interpreter has transformers: InProcess ran here")
        py = hf_interpreter()
        if not py:
            self.skipTest("no interpreter with torch + transformers + peft: set MEMFIT_HF_PYTHON or run "
                          "tools/frameworks/setup_venv.sh (.venv-frameworks)")
        p = subprocess.run([py, "-m", "unittest", "-q", "test_cuda_grid.InProcess"], cwd=HERE, capture_output=True,
                           text=True, timeout=900)
        self.assertEqual(p.returncode, 0, (p.stdout + p.stderr)[-4000:])
        self.assertNotIn("skipped", (p.stdout + p.stderr).lower().split("ok")[-1])


if __name__ == "__main__":
    unittest.main()
