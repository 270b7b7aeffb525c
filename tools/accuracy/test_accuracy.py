#!/usr/bin/python3
"""Tests for tools/accuracy (unittest, standard library only).

    /usr/bin/python3 -m unittest discover -s tools/accuracy -p 'test_*.py'

The memfit checks need a built binary (build/cli/memfit, or $MEMFIT); without one they are skipped
with a message, everything else still runs.
"""

import json
import pathlib
import os
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import accuracy as A  # noqa: E402
import memfit_cli  # noqa: E402  (tools/common, on the path through accuracy)

ROOT = A.ROOT
MEMFIT = os.environ.get("MEMFIT", os.path.join(ROOT, A.DEFAULT_MEMFIT))


def load_cases():
    return A.load_json(os.path.join(ROOT, A.CASES))


def load_records():
    return A.load_json(os.path.join(ROOT, A.MEASUREMENTS))


def have_memfit():
    return os.path.isfile(MEMFIT) and os.access(MEMFIT, os.X_OK)


class CasesFile(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.doc = load_cases()
        cls.cases = cls.doc["cases"]
        cls.records = {r["id"]: r for r in load_records()}

    def test_every_case_refers_to_an_existing_measurement(self):
        for c in self.cases:
            self.assertIn(c["id"], self.records, f"case {c['id']} has no measurement with that id")

    def test_case_ids_are_unique_and_disjoint_from_skipped(self):
        ids = [c["id"] for c in self.cases]
        self.assertEqual(len(ids), len(set(ids)), "duplicate case ids")
        skipped = [i for s in self.doc.get("skipped", []) for i in s["ids"]]
        self.assertEqual(len(skipped), len(set(skipped)), "duplicate skipped ids")
        self.assertFalse(set(ids) & set(skipped), "an id is both scored and skipped")
        for i in skipped:
            self.assertIn(i, self.records, f"skipped id {i} is not a measurement")

    def test_every_measurement_is_scored_or_skipped_with_a_reason(self):
        covered = {c["id"] for c in self.cases} | {i for s in self.doc.get("skipped", []) for i in s["ids"]}
        self.assertEqual(set(self.records) - covered, set(), "measurements neither scored nor skipped")
        for s in self.doc.get("skipped", []):
            self.assertTrue(s.get("reason", "").strip(), f"skipped {s['ids']} without a reason")

    def test_at_least_35_cases(self):
        self.assertGreaterEqual(len(self.cases), 35)

    def test_case_fields(self):
        kinds = {"full", "lora", "qlora"}
        for c in self.cases:
            with self.subTest(case=c["id"]):
                self.assertIn(c["quantity"], A.QUANTITIES)
                self.assertIn(c["kind"], kinds)
                self.assertTrue(c["setup_summary"].strip())
                self.assertIsInstance(c["config"], dict)
                self.assertTrue(c["assumptions"], "every case justifies its settings")
                for a in c["assumptions"]:
                    self.assertIsInstance(a, str)
                    self.assertNotIn("\n", a, "assumptions are one line each")
                for f in c.get("flags", []):
                    self.assertIn(f, self.doc["flag_meanings"], f"unknown flag {f}")
                ft = c["config"]["training"].get("finetune", {})
                method = ft.get("method", "full")
                if c["kind"] == "full":
                    self.assertEqual(method, "full")
                else:
                    self.assertEqual(method, "lora")
                    self.assertEqual(ft.get("base_bits", 16) == 4, c["kind"] == "qlora")
                for alt in c.get("what_if", []):
                    self.assertTrue(alt["label"].strip())
                    self.assertIsInstance(alt["set"], dict)

    def test_optimizer_impl_and_precision_are_explicit_and_justified(self):
        impls = {"foreach", "fused", "for_loop"}
        for c in self.cases:
            t = c["config"]["training"]
            with self.subTest(case=c["id"]):
                self.assertIn(t.get("optimizer_impl"), impls, "every case states optimizer_impl")
                self.assertIn("precision", t, "every case states precision")
                self.assertTrue(any(a.startswith(f"optimizer_impl {t['optimizer_impl']}:") for a in c["assumptions"]),
                                "optimizer_impl has a justification line")
                self.assertTrue(any(a.startswith(f"precision {t['precision']}") for a in c["assumptions"]),
                                "precision has a justification line")

    def test_every_flag_is_classified_for_the_expressible_population(self):
        meanings = self.doc["flag_meanings"]
        for f in list(A.EXPRESSIBLE_EXCLUDED_FLAGS) + list(A.EXPRESSIBLE_KEPT_FLAGS):
            self.assertIn(f, meanings, f"{f} is not a flag cases.json defines")
        for f in meanings:
            with self.subTest(flag=f):
                self.assertTrue(f in A.EXPRESSIBLE_EXCLUDED_FLAGS or f in A.EXPRESSIBLE_KEPT_FLAGS
                                or f.startswith(A.UNMODELLED_PREFIX), "flag neither excludes nor is kept explicitly")
                if f.startswith(A.UNMODELLED_PREFIX):
                    self.assertTrue(meanings[f].startswith("unmodelled:"))

    def test_torchtitan_op_level_selective_checkpointing_is_flagged(self):
        for c in self.cases:
            sac = c["id"].startswith("ttitan-") and c["config"]["training"]["checkpointing"] == "selective"
            with self.subTest(case=c["id"]):
                self.assertEqual("unmodelled_op_sac" in c.get("flags", []), sac)
                self.assertFalse(A.is_expressible(c) and sac)

    def test_torchtune_qlora_cases_note_the_torchao_nf4_difference(self):
        for c in self.cases:
            if c["id"].startswith("tt-") and c["kind"] == "qlora":
                with self.subTest(case=c["id"]):
                    self.assertTrue(any("torchao" in n and "bitsandbytes" in n for n in c.get("discrepancy_notes", [])))

    def test_quantity_matches_what_the_source_measured(self):
        expected = {"max_memory_allocated": "peak_allocated_bytes", "max_memory_reserved": "peak_reserved_bytes",
                    "nvidia-smi": "device_total_bytes"}
        for c in self.cases:
            q = self.records[c["id"]]["measured"]["quantity"]
            with self.subTest(case=c["id"], measured=q):
                for key, field in expected.items():
                    if q.startswith(key):
                        self.assertEqual(c["quantity"], field)
                        break
                else:  # peak active, unknown: compared with the allocated peak and marked as such
                    self.assertEqual(c["quantity"], "peak_allocated_bytes")
                    self.assertTrue(c.get("quantity_note"), "an approximate quantity must be marked")

    def test_units_are_readings_of_the_sources_unit(self):
        for c in self.cases:
            rec = self.records[c["id"]]
            with self.subTest(case=c["id"]):
                self.assertIn(c["measured_unit"], A.UNIT_READINGS[rec["measured"]["unit"]])
                self.assertGreater(A.measured_bytes(c, rec), 0)
        # The unit conventions the measurement notes state.
        by_id = {c["id"]: c for c in self.cases}
        self.assertEqual(by_id["hf-bertlarge-fp32-bs4"]["measured_unit"], "MiB")  # HF 'MB' = value // 1024**2
        self.assertEqual(by_id["fg-bertbase-fp32-bs8"]["measured_unit"], "GiB")   # DeepSpeed prints bytes / 1024**3
        self.assertEqual(by_id["lg-rt-l7-lora-mbs1-1gpu"]["measured_unit"], "GB")  # LitGPT divides by 1e9


@unittest.skipUnless(have_memfit(), f"memfit binary not found at {MEMFIT} (build it, or set MEMFIT)")
class CasesRunInMemfit(unittest.TestCase):
    def test_every_configuration_is_valid_for_memfit(self):
        for c in load_cases()["cases"]:
            with self.subTest(case=c["id"]):
                rc, result, err, _ = memfit_cli.run(MEMFIT, c["config"])
                self.assertEqual(rc, 0, f"memfit exited {rc}: {err}")
                self.assertTrue(result and result.get("ok"), (result or {}).get("errors"))
                self.assertGreater(result[c["quantity"]], 0)

    def test_what_if_configurations_are_valid(self):
        for c in load_cases()["cases"]:
            for alt in c.get("what_if", []):
                cfg = json.loads(json.dumps(c["config"]))
                for k, v in alt["set"].items():
                    A.set_path(cfg, k, v)
                with self.subTest(case=c["id"], what_if=alt["label"]):
                    rc, result, err, _ = memfit_cli.run(MEMFIT, cfg)
                    self.assertEqual(rc, 0, err)
                    self.assertTrue(result.get("ok"))

    def test_an_invalid_configuration_is_reported_as_such(self):
        rc, result, err, _ = memfit_cli.run(MEMFIT, {"model": {"preset": "no-such-preset"}})
        self.assertNotEqual(rc, 0)
        self.assertIn("preset", err)


class Statistics(unittest.TestCase):
    def test_relative_error_sign_and_size(self):
        self.assertAlmostEqual(A.rel_error(110, 100), 0.10)
        self.assertAlmostEqual(A.rel_error(75, 100), -0.25)
        with self.assertRaises(ValueError):
            A.rel_error(1, 0)

    def test_percentile_interpolates_linearly(self):
        v = [4.0, 1.0, 3.0, 2.0]  # sorted: 1 2 3 4
        self.assertEqual(A.percentile(v, 0), 1.0)
        self.assertEqual(A.percentile(v, 100), 4.0)
        self.assertAlmostEqual(A.percentile(v, 50), 2.5)
        self.assertAlmostEqual(A.percentile(v, 90), 3.7)  # rank 0.9 * 3 = 2.7
        self.assertEqual(A.percentile([5.0], 90), 5.0)
        with self.assertRaises(ValueError):
            A.percentile([], 50)

    def test_stats_on_a_synthetic_example(self):
        # estimates vs measurements chosen so that the errors are exactly these.
        measured = [100.0, 200.0, 50.0, 400.0, 1000.0]
        estimate = [110.0, 150.0, 50.0, 480.0, 700.0]
        errors = [A.rel_error(e, m) for e, m in zip(estimate, measured)]
        for got, want in zip(errors, [0.10, -0.25, 0.0, 0.20, -0.30]):
            self.assertAlmostEqual(got, want)
        s = A.stats(errors, ["a", "b", "c", "d", "e"])
        self.assertEqual(s["count"], 5)
        # |errors| sorted: 0.0 0.10 0.20 0.25 0.30
        self.assertAlmostEqual(s["median_abs_error"], 0.20)
        self.assertAlmostEqual(s["mean_abs_error"], 0.85 / 5)
        self.assertAlmostEqual(s["p90_abs_error"], 0.25 + 0.6 * 0.05)  # rank 3.6
        self.assertAlmostEqual(s["worst_abs_error"], 0.30)
        self.assertEqual(s["worst_id"], "e")
        # signed: -0.30 -0.25 0.0 0.10 0.20
        self.assertAlmostEqual(s["median_signed_error"], 0.0)
        self.assertAlmostEqual(s["p10_signed_error"], -0.30 + 0.4 * 0.05)
        self.assertAlmostEqual(s["share_over"], 0.4)
        self.assertAlmostEqual(s["share_within_10pct"], 0.4)
        self.assertAlmostEqual(s["share_within_25pct"], 0.8)

    def test_group_stats_and_summary_file(self):
        def row(cid, err, q, kind, gpus=1, flags=()):
            return {"case": {"id": cid, "quantity": q, "kind": kind, "config": {"parallel": {"num_gpus": gpus}},
                             "flags": list(flags)},
                    "error": err, "multi_gpu": gpus > 1, "measured": 100.0, "estimate": 100.0 * (1 + err)}
        rows = [row("a", 0.1, "peak_allocated_bytes", "full"), row("b", -0.3, "peak_allocated_bytes", "lora"),
                row("c", 0.5, "peak_reserved_bytes", "qlora", 8),
                row("d", 1.0, "peak_allocated_bytes", "full", flags=["torch_compile"])]
        rows_all, rows = rows, rows[:3]
        by_q = A.group_stats(rows, lambda r: [r["case"]["quantity"]])
        self.assertEqual(by_q["peak_allocated_bytes"]["count"], 2)
        self.assertAlmostEqual(by_q["peak_allocated_bytes"]["median_abs_error"], 0.2)
        self.assertAlmostEqual(by_q["peak_reserved_bytes"]["worst_abs_error"], 0.5)
        by_kind = A.group_stats(rows, A.kinds)
        self.assertEqual(by_kind["multi-GPU"]["count"], 1)
        self.assertEqual(by_kind["single GPU"]["count"], 2)
        with tempfile.TemporaryDirectory() as tmp:
            cases_path = os.path.join(tmp, "c.json")
            meas_path = os.path.join(tmp, "m.json")
            for p in (cases_path, meas_path):
                with open(p, "w") as f:
                    f.write("{}")
            s = A.build_summary(rows, cases_path, meas_path, "build/cli/memfit")
        self.assertEqual(s["count"], 3)
        self.assertAlmostEqual(s["median_abs_error"], 0.3)
        self.assertAlmostEqual(s["worst_abs_error"], 0.5)
        self.assertAlmostEqual(s["p90_abs_error"], 0.46)  # |e| sorted 0.1 0.3 0.5, rank 1.8
        self.assertEqual(set(s["by_quantity"]), {"peak_allocated_bytes", "peak_reserved_bytes"})
        for key in ("count", "median_abs_error", "p90_abs_error", "worst_abs_error", "by_quantity", "generated_from"):
            self.assertIn(key, s)
        # With an excluded case added: the top level counts it, the expressible block does not.
        with tempfile.TemporaryDirectory() as tmp:
            cases_path = os.path.join(tmp, "c.json")
            with open(cases_path, "w") as f:
                f.write("{}")
            s = A.build_summary(rows_all, cases_path, cases_path, "build/cli/memfit")
        self.assertEqual(s["count"], 4)
        self.assertAlmostEqual(s["worst_abs_error"], 1.0)
        ex = s["expressible"]
        self.assertEqual(ex["count"], 3)
        self.assertEqual(ex["ids"], ["a", "b", "c"])
        self.assertIn("torch_compile", ex["excluded_flags"])
        self.assertAlmostEqual(ex["worst_abs_error"], 0.5)
        for key in ("median_abs_error", "mean_abs_error", "p90_abs_error", "worst_id", "median_signed_error",
                    "p10_signed_error", "p90_signed_error", "by_quantity", "by_kind"):
            self.assertIn(key, ex)
        self.assertEqual(set(ex["by_quantity"]["peak_allocated_bytes"]), set(s["by_quantity"]["peak_allocated_bytes"]))
        moe = s["measured_over_estimate"]
        self.assertEqual((moe["quantity"], moe["population"], moe["count"]), ("peak_allocated_bytes", "expressible", 2))
        # measured / estimate for a and b: 1/1.1 and 1/0.7; 'd' (excluded) and 'c' (reserved) do not count.
        lo, hi = 1 / 1.1, 1 / 0.7
        self.assertAlmostEqual(moe["p10"], lo + 0.1 * (hi - lo), places=5)
        self.assertAlmostEqual(moe["p90"], lo + 0.9 * (hi - lo), places=5)

    def test_expressible_definition(self):
        self.assertTrue(A.is_expressible({"flags": []}))
        self.assertTrue(A.is_expressible({}))
        for kept in A.EXPRESSIBLE_KEPT_FLAGS:
            self.assertTrue(A.is_expressible({"flags": [kept]}), kept)
        for excluded in A.EXPRESSIBLE_EXCLUDED_FLAGS:
            self.assertFalse(A.is_expressible({"flags": ["low_confidence", excluded]}), excluded)
        self.assertFalse(A.is_expressible({"flags": ["unmodelled_anything"]}))
        self.assertEqual(A.excluding_flags({"flags": ["seq_from_default", "float8", "unmodelled_x"]}),
                         ["float8", "unmodelled_x"])
        self.assertEqual(A.measured_over_estimate([])["count"], 0)

    def test_measured_bytes_uses_the_resolved_unit(self):
        rec = {"measured": {"value": 14949, "unit": "MB"}}
        self.assertEqual(A.measured_bytes({"id": "x", "measured_unit": "MiB"}, rec), 14949 * 2**20)
        rec = {"measured": {"value": 2.5, "unit": "GB"}}
        self.assertEqual(A.measured_bytes({"id": "x", "measured_unit": "GB"}, rec), 2.5e9)
        with self.assertRaises(ValueError):
            A.measured_bytes({"id": "x", "measured_unit": "MiB"}, rec)  # GB cannot be read as MiB

    def test_grid_summary_reads_the_json_report(self):
        def row(quantity, field, measured, memfit, check, ok, rel=None, status="exact"):
            return {"quantity": quantity, "field": field, "measured": measured, "memfit": memfit,
                    "relative_error": rel, "status": status, "check": check, "ok": ok}
        report = {"configurations": [
            {"name": "cfg_one", "memfit_error": None, "pass": False, "failures": ["gradients"], "rows": [
                row("parameter_count", "parameter_count", 10, 10, "exact", True, 0.0),
                row("gradients (bytes)", "breakdown.gradients", 40, 44, "exact", False, 0.1, "MISMATCH"),
                row("optimizer_states (bytes)", "breakdown.optimizer_states", 8, 12, "exact", True, 0.5,
                    "exact (incl. 4 B of step scalars)"),
                row("activations (bytes)", "breakdown.activations", 100, 101, "tolerance", True, 0.01, "ok"),
                row("activations, raw torch 1.13 CPU (bytes)", "breakdown.activations", 90, 101, "info", True, 0.12,
                    "info")]},
            {"name": "cfg_two", "memfit_error": "memfit exited 2", "pass": False, "failures": ["x"], "rows": []}]}
        parsed = A.summarize_grid(report)
        self.assertEqual(list(parsed), ["cfg_one", "cfg_two"])
        self.assertEqual(parsed["cfg_one"]["exact"], ["parameter_count", "optimizer_states (bytes)"])
        self.assertEqual(parsed["cfg_one"]["not_exact"], ["gradients (bytes)"])
        self.assertAlmostEqual(parsed["cfg_one"]["activation_error"], 0.01)
        self.assertFalse(parsed["cfg_one"]["activation_exact"])
        self.assertIsNone(parsed["cfg_two"]["activation_error"])
        self.assertEqual(A.summarize_grid(None), {})


if __name__ == "__main__":
    unittest.main()


class BandIsGeneratedFromTheSummary(unittest.TestCase):
    def test_core_band_matches_the_summary(self):
        import band
        root = pathlib.Path(__file__).resolve().parents[2]
        summary = json.loads((root / "docs/data/accuracy_summary.json").read_text())
        expected = band.render(*band.band(summary))
        self.assertEqual((root / "core/src/accuracy_band.inc").read_text(), expected,
                         "core/src/accuracy_band.inc is stale: run /usr/bin/python3 tools/accuracy/band.py")
