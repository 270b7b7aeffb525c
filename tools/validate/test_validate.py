#!/usr/bin/python3
"""Tests of the measurement harness (stdlib unittest, Debian's python3 + torch).

    /usr/bin/python3 -m unittest discover -s tools/validate -p 'test_*.py' -v
"""

import json
import math
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import formulas  # noqa: E402
import grid  # noqa: E402
from measure import measure, normalize_config, ConfigError  # noqa: E402

PY = sys.executable
FIX = os.path.join(HERE, "fixtures")
FAKE = os.path.join(FIX, "fake_memfit.py")


def load(name):
    with open(os.path.join(FIX, name)) as f:
        return json.load(f)


class PaperGPT2(unittest.TestCase):
    """GPT-2 style, fp32, B=2, T=16, d=64, h=4, ff=256, V=1000, L=2, tied:
    every saved tensor derived on paper (see README.md)."""

    @classmethod
    def setUpClass(cls):
        cls.cfg = load("gpt2_tiny_fp32.json")
        cls.res = measure(cls.cfg)

    def test_parameters(self):
        V, P, d, ff, L = 1000, 64, 64, 256, 2
        per_layer = 2 * 2 * d + 3 * (d * d + d) + (d * d + d) + (d * ff + ff) + (ff * d + d)
        n = V * d + P * d + L * per_layer + 2 * d
        self.assertEqual(n, 168192)
        self.assertEqual(self.res["parameter_count"], n)
        self.assertEqual(self.res["trainable_parameter_count"], n)
        self.assertEqual(self.res["parameter_bytes"], 4 * n)
        self.assertEqual(self.res["gradient_bytes"], 4 * n)
        self.assertEqual(self.res["optimizer_state_bytes"], 2 * 4 * n)       # exp_avg + exp_avg_sq
        self.assertEqual(self.res["optimizer_step_scalar_bytes"], 4 * 36)   # 36 tensors, 0-dim fp32 step
        self.assertEqual(self.res["buffer_bytes"], L * 64 * 64)             # per-layer bool causal buffer

    def test_block_op_by_op(self):
        B, T, d, h, ff = 2, 16, 64, 4, 256
        btd = 4 * B * T * d                      # 8192
        want = {
            "input_layernorm": btd + 2 * 4 * B * T,      # input + mean + rstd
            "self_attn.q_proj": btd,                    # LN output, shared by q/k/v projections
            "self_attn:qk_matmul": 2 * btd,             # contiguous copies of q and k^T
            "self_attn:scale": 4,                       # 0-dim divisor tensor
            "self_attn:softmax": 4 * B * h * T * T,     # softmax output (also the PV matmul input)
            "self_attn:pv_matmul": btd,                 # contiguous copy of v
            "self_attn.o_proj": btd,                    # merged heads
            "post_attention_layernorm": btd + 2 * 4 * B * T,
            "mlp.up_proj": btd,
            "mlp.act": 4 * B * T * ff,                  # GELU input
            "mlp.down_proj": 4 * B * T * ff,            # GELU output
        }
        for layer in self.res["per_layer_breakdown"]["layers"]:
            self.assertEqual(layer["ops"], want, "layer %d" % layer["layer"])
            self.assertEqual(layer["total"], 139780)

    def test_outside_and_head(self):
        B, T, d, V = 2, 16, 64, 1000
        out = self.res["per_layer_breakdown"]["outside_layers"]
        self.assertEqual(out, {"body:embed_tokens": 8 * B * T, "body:embed_positions": 8 * T,
                               "body:norm": 4 * B * T * d + 2 * 4 * B * T,
                               "head:lm_head": 4 * B * T * d,
                               "head:cross_entropy": 4 * B * T * V + 8 * B * T + 4})
        self.assertEqual(self.res["activations_bytes"], 2 * 139780 + 8 * B * T + 8 * T + 4 * B * T * d + 8 * B * T)
        self.assertEqual(self.res["logits_and_loss_saved_bytes"], 4 * B * T * d + 4 * B * T * V + 8 * B * T + 4)
        lg = self.res["logits"]
        self.assertEqual(lg["logits_bytes"], 4 * B * T * V)
        self.assertEqual(lg["fp32_upcast_bytes"], 0)
        # logits + log_softmax output alive together, plus a few small tensors
        self.assertGreaterEqual(lg["measured_head_peak_bytes"], 8 * B * T * V)
        self.assertLess(lg["measured_head_peak_bytes"], 8 * B * T * V + 4096)

    def test_profiler_agrees(self):
        self.assertEqual(self.res["memory_timeline"]["unexplained_live_after_forward_bytes"], 0)

    def test_formulas_module(self):
        e = formulas.expected(self.cfg)
        self.assertEqual(e["block"], 139780)
        self.assertEqual(e["body"], self.res["activations_bytes"])
        self.assertEqual(e["head"], self.res["logits_and_loss_saved_bytes"])


def _adafactor_bytes(shapes):
    tot = 0
    for sh in shapes:
        if len(sh) >= 2:
            tot += 4 * (math.prod(sh[:-1]) + math.prod(sh[:-2] + sh[-1:]))
        else:
            tot += 4 * math.prod(sh)
    return tot


class Grid(unittest.TestCase):
    """Every grid configuration: measurements against the paper formulas and
    against independent checks (profiler, optimizer state layouts)."""

    @classmethod
    def setUpClass(cls):
        cls.results = []
        for e in grid.grid():
            res = measure(e["config"])
            cls.results.append((e["name"], e["config"], res))

    def test_grid_size_and_coverage(self):
        names = [n for n, _, _ in self.results]
        self.assertGreaterEqual(len(names), 24)
        cfgs = [c for _, c, _ in self.results]
        tr = [c["training"] for c in cfgs]
        self.assertEqual({t["optimizer"] for t in tr}, {"adamw", "sgd_momentum", "sgd", "adafactor"})
        self.assertEqual({t["checkpointing"] for t in tr}, {"none", "full"})
        self.assertEqual({t["precision"] for t in tr}, {"fp32", "bf16"})
        self.assertTrue(any(c["model"]["num_experts"] == 4 and c["model"]["num_experts_per_tok"] == 2 for c in cfgs))
        self.assertTrue(any(c["model"]["num_key_value_heads"] < c["model"]["num_attention_heads"] for c in cfgs))
        self.assertTrue(any(t["finetune"]["method"] == "lora" for t in tr))

    def test_formulas(self):
        for name, cfg, res in self.results:
            lora = cfg["training"]["finetune"]["method"] == "lora"
            for variant, lk, bk, hk in (("cuda", "per_layer_totals_cuda", "activations_bytes_cuda",
                                         "logits_and_loss_saved_bytes_cuda"),
                                        ("cpu113", "per_layer_totals", "activations_bytes",
                                         "logits_and_loss_saved_bytes")):
                with self.subTest(config=name, variant=variant):
                    e = formulas.expected(cfg, variant)
                    layers = res[lk][1:] if lora else res[lk]
                    self.assertTrue(layers)
                    for v in layers:
                        self.assertEqual(v, e["block"])
                    if not lora:
                        self.assertEqual(res[bk], e["body"])
                    self.assertEqual(res[hk], e["head"])

    def test_profiler_explains_everything_alive_after_forward(self):
        for name, _, res in self.results:
            with self.subTest(config=name):
                self.assertEqual(res["memory_timeline"]["unexplained_live_after_forward_bytes"], 0)

    def test_checkpointing(self):
        for name, cfg, res in self.results:
            if cfg["training"]["checkpointing"] != "full":
                continue
            with self.subTest(config=name):
                self.assertTrue(res["checkpoint_grads_match_no_checkpoint"])
                self.assertEqual(res["one_block_saved_bytes"], max(res["per_layer_totals"]))
                self.assertLess(res["activations_bytes"], res["activations_without_checkpointing_bytes"])

    def test_gradients_and_optimizer_states(self):
        from models import build_model
        for name, cfg, res in self.results:
            with self.subTest(config=name):
                model = build_model(normalize_config(cfg))
                tp = [p for p in model.parameters() if p.requires_grad]
                s = 4 if cfg["training"]["precision"] == "fp32" else 2
                nbytes = sum(p.numel() for p in tp) * s
                self.assertEqual(res["trainable_parameter_count"], sum(p.numel() for p in tp))
                self.assertEqual(res["gradient_bytes"], nbytes)
                opt = cfg["training"]["optimizer"]
                want = {"adamw": 2 * nbytes, "sgd_momentum": nbytes, "sgd": 0,
                        "adafactor": _adafactor_bytes([list(p.shape) for p in tp])}[opt]
                self.assertEqual(res["optimizer_state_bytes"], want)
                self.assertEqual(res["optimizer_step_scalar_bytes"], 4 * len(tp) if opt == "adamw" else 0)
                self.assertEqual(res["master_weights_bytes"], 0)
                del model

    def test_lora_trainable_counts(self):
        for name, cfg, res in self.results:
            ft = cfg["training"]["finetune"]
            if ft["method"] != "lora":
                continue
            m = cfg["model"]
            d, h, r, L = m["hidden_size"], m["num_attention_heads"], ft["lora_rank"], m["num_hidden_layers"]
            hd = m["head_dim"]
            kv = m["num_key_value_heads"]
            ff = m["intermediate_size"]
            dims = {"q": (d, h * hd), "k": (d, kv * hd), "v": (d, kv * hd), "o": (h * hd, d),
                    "gate": (d, ff), "up": (d, ff), "down": (ff, d)}
            n = L * sum(r * (a + b) for t, (a, b) in dims.items() if t in ft["lora_targets"])
            with self.subTest(config=name):
                self.assertEqual(res["trainable_parameter_count"], n)

    def test_gqa_saves_like_mha(self):
        by = {n: r for n, _, r in self.results}
        self.assertEqual(by["llama_fp32_gqa_adamw"]["activations_bytes"],
                         by["llama_fp32_mha_adamw"]["activations_bytes"])
        self.assertLess(by["llama_fp32_gqa_adamw"]["parameter_count"],
                        by["llama_fp32_mha_adamw"]["parameter_count"])

    def test_moe_routes_all_tokens(self):
        for name, cfg, res in self.results:
            if not cfg["model"]["num_experts"]:
                continue
            B, T = cfg["training"]["micro_batch_size"], cfg["training"]["seq_len"]
            for counts in res["tokens_per_expert"]:
                self.assertEqual(sum(counts), B * T * cfg["model"]["num_experts_per_tok"])


class Behaviour(unittest.TestCase):
    def test_deterministic(self):
        cfg = load("gpt2_tiny_fp32.json")
        cfg["training"]["dropout"] = 0.1
        a = measure(cfg, profile=False)
        b = measure(cfg, profile=False)
        self.assertEqual(json.dumps(a, sort_keys=True), json.dumps(b, sort_keys=True))

    def test_cpu_dropout_saves_float_masks(self):
        cfg = load("gpt2_tiny_fp32.json")
        cfg["training"]["dropout"] = 0.1
        cuda_like = measure(cfg, profile=False)
        cfg["training"]["dropout_impl"] = "cpu"
        cpu = measure(cfg, profile=False)
        B, T, d, h, L = 2, 16, 64, 4, 2
        # CPU F.dropout saves a float32 noise tensor (4 B/elt) instead of a
        # bool mask (1 B/elt): 3 more bytes per element of every mask
        # (per layer: attention probs, attention residual, MLP residual;
        # plus the embedding dropout).
        per_layer_extra = 3 * (B * h * T * T + 2 * B * T * d)
        self.assertEqual(cpu["activations_bytes"] - cuda_like["activations_bytes"],
                         L * per_layer_extra + 3 * B * T * d)

    def test_bad_config(self):
        with self.assertRaises(ConfigError):
            normalize_config({"model": {}, "training": {}})
        cfg = load("gpt2_tiny_fp32.json")
        cfg["training"]["optimizer"] = "lamb"
        with self.assertRaises(ConfigError):
            normalize_config(cfg)

    def test_cli(self):
        p = subprocess.run([PY, os.path.join(HERE, "measure.py"), os.path.join(FIX, "gpt2_tiny_fp32.json"),
                            "--explain", "--no-profile"], capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        r = json.loads(p.stdout)
        for k in ("parameter_count", "trainable_parameter_count", "gradient_bytes", "optimizer_state_bytes",
                  "optimizer_step_scalar_bytes", "activations_bytes", "logits_and_loss_saved_bytes",
                  "per_layer_breakdown"):
            self.assertIn(k, r)
        self.assertIn("self_attn:softmax", p.stderr)
        with tempfile.NamedTemporaryFile("w", suffix=".json") as f:
            f.write("{not json")
            f.flush()
            p = subprocess.run([PY, os.path.join(HERE, "measure.py"), f.name], capture_output=True, text=True)
        self.assertEqual(p.returncode, 2)
        self.assertIn("error", p.stderr)


class Compare(unittest.TestCase):
    """grid.py --memfit against a fake memfit binary."""

    ONLY = "gpt2_fp32_tied_adamw,llama_bf16_ckpt_adamw"

    def run_grid(self, mode, *extra, binary=FAKE):
        """(exit status, Markdown report, stderr); the JSON report is left in self.report."""
        with tempfile.TemporaryDirectory() as tmp:
            rep = os.path.join(tmp, "report.md")
            rep_json = os.path.join(tmp, "report.json")
            env = dict(os.environ, FAKE_MEMFIT_MODE=mode)
            p = subprocess.run([PY, os.path.join(HERE, "grid.py"), "--only", self.ONLY, "--out", tmp,
                                "--no-profile", "--memfit", binary, "--report", rep, "--json-report", rep_json]
                               + list(extra), capture_output=True, text=True, env=env)
            text = ""
            if os.path.exists(rep):
                with open(rep) as f:
                    text = f.read()
            self.report = None
            if os.path.exists(rep_json):
                with open(rep_json) as f:
                    self.report = json.load(f)
        return p.returncode, text, p.stderr

    def test_the_markdown_is_rendered_from_the_json(self):
        rc, text, err = self.run_grid("opt_plus_1")
        self.assertEqual(text, grid.render_markdown(self.report))
        self.assertEqual(self.report["configuration_count"], 2)
        self.assertEqual(self.report["passing_count"], 0)
        rows = {r["field"]: r for r in self.report["configurations"][0]["rows"] if r["check"] != "info"}
        opt = rows["breakdown.optimizer_states"]
        self.assertEqual((opt["check"], opt["ok"], opt["status"]), ("exact", False, "MISMATCH"))
        self.assertEqual(opt["memfit"], opt["measured"] + 1)
        self.assertEqual(rows["breakdown.activations"]["check"], "tolerance")
        self.assertTrue(rows["breakdown.activations"]["ok"])

    def test_exact(self):
        rc, text, err = self.run_grid("exact")
        self.assertEqual(rc, 0, err + text)
        self.assertIn("all 2 configurations pass", text)
        self.assertEqual(self.report["passing_count"], 2)
        self.assertIn("| optimizer_states (bytes) |", text)

    def test_one_byte_off_fails(self):
        rc, text, _ = self.run_grid("opt_plus_1")
        self.assertEqual(rc, 1)
        self.assertIn("MISMATCH", text)

    def test_step_scalars_accepted(self):
        rc, text, _ = self.run_grid("opt_with_steps")
        self.assertEqual(rc, 0, text)
        self.assertIn("incl.", text)

    def test_activation_tolerance(self):
        self.assertEqual(self.run_grid("act_plus_2pct")[0], 0)
        rc, text, _ = self.run_grid("act_plus_5pct")
        self.assertEqual(rc, 1)
        self.assertIn("OFF > 3%", text)

    def test_missing_field(self):
        rc, text, _ = self.run_grid("no_gradients")
        self.assertEqual(rc, 1)
        self.assertIn("memfit field breakdown.gradients is absent", text)

    def test_failing_and_garbage_binary(self):
        rc, text, _ = self.run_grid("fail")
        self.assertEqual(rc, 1)
        self.assertIn("memfit exited 3", text)
        self.assertIn("memfit exited 3", self.report["configurations"][0]["memfit_error"])
        rc, text, _ = self.run_grid("garbage")
        self.assertEqual(rc, 1)
        self.assertIn("no valid JSON", text)

    def test_missing_binary(self):
        rc, _, err = self.run_grid("exact", binary="/nonexistent/memfit")
        self.assertEqual(rc, 2)
        self.assertIn("not found", err)


if __name__ == "__main__":
    unittest.main()
