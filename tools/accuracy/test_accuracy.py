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
        kinds = {"full", "lora", "qlora", "peft"}
        for c in self.cases:
            with self.subTest(case=c["id"]):
                self.assertIn(c["quantity"], A.QUANTITIES + (A.OOM_QUANTITY,))
                self.assertEqual(A.is_oom_case(c), self.records[c["id"]]["measured"]["quantity"] == "oom",
                                 "out-of-memory records, and only they, are checked by verdict")
                if not A.is_oom_case(c):
                    self.assertIn(c["measured_unit"], A.UNITS)
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
                elif c["kind"] == "peft":
                    self.assertNotIn(method, ("full", "lora"))
                else:
                    self.assertEqual(method, "lora")
                    self.assertEqual(ft.get("base_bits", 16) == 4, c["kind"] == "qlora")
                for alt in c.get("what_if", []):
                    self.assertTrue(alt["label"].strip())
                    self.assertIsInstance(alt["set"], dict)

    def test_optimizer_impl_and_precision_are_explicit_and_justified(self):
        impls = {"foreach", "fused", "for_loop", "foreach_legacy"}
        for c in self.cases:
            t = c["config"]["training"]
            with self.subTest(case=c["id"]):
                self.assertIn(t.get("optimizer_impl"), impls, "every case states optimizer_impl")
                self.assertIn("precision", t, "every case states precision")
                self.assertTrue(any(a.startswith(f"optimizer_impl {t['optimizer_impl']}:") for a in c["assumptions"]),
                                "optimizer_impl has a justification line")
                self.assertTrue(any(a.startswith(f"precision {t['precision']}") for a in c["assumptions"]),
                                "precision has a justification line")
                self.assertIn(t.get("framework"), A.PROFILES, "every case names its implementation profile")
                self.assertTrue(any(a.startswith(f"framework {t['framework']}") for a in c["assumptions"]),
                                "framework has a justification line")
                self.assertNotIn("chunked_loss", t, "the loss is training.loss")

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
                    "nvidia-smi": "device_total_bytes", "oom": A.OOM_QUANTITY}
        for c in self.cases:
            q = self.records[c["id"]]["measured"]["quantity"]
            with self.subTest(case=c["id"], measured=q):
                for key, field in expected.items():
                    if q.startswith(key):
                        self.assertEqual(c["quantity"], field)
                        break
                else:  # peak active, unknown: decided per source, and marked as such
                    self.assertIn(c["quantity"], A.QUANTITIES)
                    self.assertTrue(c.get("quantity_note"), "an approximate or decided quantity must be marked")
                    if q.startswith("peak_memory_active"):
                        self.assertEqual(c["quantity"], "peak_allocated_bytes")

    def test_units_are_readings_of_the_sources_unit(self):
        for c in self.cases:
            rec = self.records[c["id"]]
            if A.is_oom_case(c):
                continue
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
    @classmethod
    def setUpClass(cls):
        cls.build = A.Build.of(MEMFIT)

    def check_runs(self, config, quantity):
        """The configuration runs (as written, or provisionally), or waits only for values issue 8 adds."""
        result, _, error = A.run_case(MEMFIT, config, self.build)
        if result is None:
            self.assertTrue(str(error).startswith("awaiting core support"), f"memfit rejected it: {error}")
            cfg, blockers = A.provisional_config(config, self.build)
            for b in blockers:
                self.assertTrue(A.blocker_is_pending(config, b), f"not a value issue 8 adds: {b}")
            return
        if quantity == A.OOM_QUANTITY:
            self.assertIn(result["fits"]["verdict"], ("fits", "tight", "does_not_fit"))
        else:
            self.assertGreater(result[quantity], 0)

    def test_every_configuration_is_valid_for_memfit(self):
        for c in load_cases()["cases"]:
            with self.subTest(case=c["id"]):
                self.check_runs(c["config"], c["quantity"])

    def test_what_if_configurations_are_valid(self):
        for c in load_cases()["cases"]:
            for alt in c.get("what_if", []):
                cfg = json.loads(json.dumps(c["config"]))
                for k, v in alt["set"].items():
                    A.set_path(cfg, k, v)
                with self.subTest(case=c["id"], what_if=alt["label"]):
                    self.check_runs(cfg, c["quantity"])

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
                    "record": {"source": {"title": "S"}}, "provisional": [],
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

    def test_measured_bytes_divides_even_totals_only(self):
        total = {"measured": {"value": 156, "unit": "GB", "per_gpu": False}}
        case = {"id": "x", "measured_unit": "GiB", "measured_divisor": 2, "config": {"parallel": {"num_gpus": 2}}}
        self.assertEqual(A.measured_bytes(case, total), 78 * 2**30)
        with self.assertRaises(ValueError):  # a total needs a divisor
            A.measured_bytes({"id": "x", "measured_unit": "GiB", "config": {}}, total)
        with self.assertRaises(ValueError):  # the divisor is the GPU count
            A.measured_bytes({**case, "measured_divisor": 4}, total)
        with self.assertRaises(ValueError):  # a per-GPU value is not divided
            A.measured_bytes(case, {"measured": {"value": 1, "unit": "GB", "per_gpu": True}})
        self.assertEqual(A.measured_bytes({"id": "x", "measured_unit": "bytes"}, {"measured": {"value": 5, "unit": "bytes"}}), 5)
        self.assertEqual(A.measured_bytes({"id": "x", "measured_unit": "GiB"}, {"measured": {"value": 2, "unit": "G"}}), 2 * 2**30)

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
        expected = band.render_summary(summary)
        self.assertEqual((root / "core/src/accuracy_band.inc").read_text(), expected,
                         "core/src/accuracy_band.inc is stale: run /usr/bin/python3 tools/accuracy/band.py")

    def test_population_table_is_indexable(self):
        import band
        rows = [row(f"c{i}", e, fw="hf", kind="lora") for i, e in enumerate([0.1 * k - 0.5 for k in range(12)])]
        rows += [row("t1", 0.2, fw="torchtune", kind="full"), row("t2", -0.2, fw="torchtune", kind="full", gpus=8)]
        bands = A.population_bands(rows)
        self.assertEqual(len(bands["populations"]), len(A.PROFILES) * len(A.KIND_LABEL) * 2)
        summary = {"count": 14, "p10_signed_error": -0.4, "p90_signed_error": 0.4, "bands": bands}
        frameworks, table = band.population_table(summary)
        self.assertEqual(frameworks, list(A.PROFILES))
        i_hf_lora_single = (0 * len(band.METHODS) + band.METHODS.index("lora")) * 2 + 0
        fw, m, g, lo, hi, n, fb = table[i_hf_lora_single]
        self.assertEqual((fw, m, g, n, fb), ("hf", "lora", "single", 12, False))
        i_tt_full_multi = (A.PROFILES.index("torchtune") * len(band.METHODS) + 0) * 2 + 1
        self.assertEqual(table[i_tt_full_multi][5:], (1, True))  # one case: the whole set's band
        self.assertAlmostEqual(table[i_tt_full_multi][3], bands["whole"]["low"])
        text = band.render_summary(summary)
        self.assertIn("kMeasuredBands[]", text)
        self.assertIn("kMeasuredBandLowRatio", text)  # the whole-set constants stay until the core indexes the table
        self.assertEqual(text.count("},  //"), len(table))


def row(cid, err, q="peak_allocated_bytes", kind="full", gpus=1, flags=(), fw="hf", source="S", prov=()):
    return {"case": {"id": cid, "quantity": q, "kind": kind, "flags": list(flags),
                     "config": {"parallel": {"num_gpus": gpus}, "training": {"framework": fw}}},
            "record": {"source": {"title": source}, "confidence": "high", "measured": {}},
            "error": err, "multi_gpu": gpus > 1, "measured": 100.0, "estimate": 100.0 * (1 + err),
            "provisional": list(prov), "what_if": []}


class Populations(unittest.TestCase):
    def test_headline_has_the_five_numbers(self):
        rows = [row("a", 0.1), row("b", -0.2), row("c", 0.05), row("d", -0.5)]
        h = A.headline(rows)
        self.assertEqual(h["count"], 4)
        self.assertAlmostEqual(h["median_abs_error"], 0.15)
        self.assertAlmostEqual(h["share_within_15pct"], 0.5)  # 0.1 and 0.05
        self.assertAlmostEqual(h["median_signed_error"], (-0.2 + 0.05) / 2)
        self.assertEqual(h["worst_id"], "d")

    def test_groups_by_source_profile_method_and_gpus(self):
        rows = ([row(f"s{i}", 0.1, source="big") for i in range(5)] + [row("x", 0.3, source="small")] +
                [row("l", -0.1, kind="lora", fw="torchtune", gpus=4), row("p", -0.3, kind="peft")])
        by_src = A.grouped_headlines(rows, lambda r: [A.source_key(r["record"])], A.SOURCE_MIN_CASES)
        self.assertEqual(list(by_src), ["big"])  # sources with fewer than 5 cases are not shown on their own
        self.assertEqual(A.grouped_headlines(rows, A.profile_class)["torchtune"]["count"], 1)
        self.assertEqual(set(A.grouped_headlines(rows, A.method_class)), {"full", "LoRA", "other PEFT"})
        self.assertEqual(A.grouped_headlines(rows, A.gpus_class)["multi-GPU"]["count"], 1)
        self.assertEqual(A.source_counts(rows), {"big": 5, "small": 1, "S": 2})

    def test_expressible_share_counts_dropped_settings_over_all_records(self):
        doc = {"cases": [{"id": "a", "flags": []}, {"id": "b", "flags": ["padded_seq_cap"]},
                         {"id": "c", "flags": ["unmodelled_x"]}, {"id": "d", "flags": ["torch_compile"]}],
               "skipped": [{"ids": ["e", "f"], "reason": "r"}]}
        share = A.expressible_share(doc, [{}] * 6)
        # a padded cap is a doubt about the measurement, not a dropped setting
        self.assertEqual((share["without_dropped_setting"], share["records"], share["skipped"]), (2, 6, 2))
        self.assertAlmostEqual(share["share"], 2 / 6)

    def test_oom_summary_lists_what_is_shown_fitting(self):
        def o(cid, verdict, prov=()):
            return {"case": {"id": cid}, "verdict": verdict, "ok": verdict == "does_not_fit", "provisional": list(prov)}
        s = A.oom_summary([o("a", "does_not_fit"), o("b", "fits"), o("c", "tight", ["x"])])
        self.assertEqual((s["count"], s["does_not_fit"]), (3, 1))
        self.assertEqual((s["shown_fitting"], s["shown_tight"], s["provisional"]), (["b"], ["c"], ["c"]))

    def test_population_band_falls_back_below_the_minimum(self):
        rows = [row(f"h{i}", e) for i, e in enumerate([-0.3, -0.2, -0.1, 0.0, 0.1, 0.2, 0.3, 0.0, 0.0, 0.0])]
        rows.append(row("t", 1.0, fw="torchtune"))
        bands = A.population_bands(rows)
        pops = {(b["framework"], b["method"], b["gpus"]): b for b in bands["populations"]}
        own = pops[("hf", "full", "single")]
        self.assertFalse(own["fallback"])
        self.assertEqual(own["cases"], 10)
        lo, hi = A.band_of(rows[:10])
        self.assertAlmostEqual(own["low"], round(lo, 6))
        fb = pops[("torchtune", "full", "single")]
        self.assertTrue(fb["fallback"])
        self.assertAlmostEqual(fb["low"], bands["whole"]["low"])
        self.assertEqual(bands["whole"]["cases"], 11)


class ProvisionalRuns(unittest.TestCase):
    BUILD = A.Build({"training.framework": ["hf"], "training.attention": ["flash", "eager"],
                     "training.chunked_loss": None, "training.precision": ["bf16", "bf16_mixed"],
                     "training.optimizer": ["adamw"], "training.finetune.method": ["full", "lora"],
                     "training.finetune.lora_targets": ["q", "k", "v", "o"], "hardware.gpu": None},
                    ["a100-80gb", "rtx-3090-24gb"])

    def test_known_values_run_as_written(self):
        cfg = {"training": {"framework": "hf", "attention": "flash"}, "hardware": {"gpu": "a100-80gb"}}
        out, changes = A.provisional_config(cfg, self.BUILD)
        self.assertEqual((out, changes), (cfg, []))

    def test_pending_values_map_to_the_closest_known_setting(self):
        cfg = {"training": {"framework": "torchtune", "attention": "sdpa", "loss": "chunked", "precision": "bf16_autocast",
                            "finetune": {"method": "dora", "lora_targets": ["qkv", "o"]}},
               "hardware": {"gpu": "a100-sxm4-80gb"}}
        out, changes = A.provisional_config(cfg, self.BUILD)
        self.assertNotIn("framework", out["training"])
        self.assertEqual(out["training"]["attention"], "flash")
        self.assertIs(out["training"]["chunked_loss"], True)
        self.assertNotIn("loss", out["training"])
        self.assertEqual(out["training"]["precision"], "bf16")
        self.assertEqual(out["training"]["finetune"], {"method": "lora", "lora_targets": ["q", "k", "v", "o"]})
        self.assertEqual(out["hardware"]["gpu"], "a100-80gb")
        self.assertFalse(any("loss" in c for c in changes), "chunked -> chunked_loss true is the same setting")
        self.assertFalse(any("hardware.gpu" in c for c in changes), "an alias of the same card is not a substitution")
        self.assertEqual(len(changes), 5)
        out, changes = A.provisional_config({"hardware": {"gpu": "titan-rtx-24gb"}}, self.BUILD)
        self.assertEqual((out["hardware"]["gpu"], len(changes)), ("rtx-3090-24gb", 1))

    def test_values_without_a_closest_setting_wait(self):
        cfg = {"training": {"optimizer": "galore_adamw", "finetune": {"method": "prefix_tuning"}},
               "hardware": {"gpu": "no-such-card"}}
        out, blockers = A.provisional_config(cfg, self.BUILD)
        self.assertIsNone(out)
        self.assertEqual(len(blockers), 3)
        self.assertTrue(A.blocker_is_pending(cfg, blockers[0]))
        self.assertTrue(A.blocker_is_pending(cfg, blockers[1]))
        self.assertFalse(A.blocker_is_pending(cfg, blockers[2]), "an unknown card name is not a pending alias")


class HeadlineIsTheSameEverywhere(unittest.TestCase):
    def test_readme_quotes_the_summary(self):
        import re
        root = pathlib.Path(__file__).resolve().parents[2]
        summary = json.loads((root / "docs/data/accuracy_summary.json").read_text())
        h = summary["headline"]["all"]
        readme = " ".join((root / "README.md").read_text().split())
        m = re.search(r"median \|error\| ([0-9.]+) %, 90th percentile ([0-9.]+) %, ([0-9]+) % within 15 %", readme)
        self.assertIsNotNone(m, "README's Accuracy section states the headline")
        self.assertEqual(m.group(1), f"{h['median_abs_error'] * 100:.1f}")
        self.assertEqual(m.group(2), f"{h['p90_abs_error'] * 100:.1f}")
        self.assertEqual(m.group(3), f"{h['share_within_15pct'] * 100:.0f}")
        page = (root / "docs/accuracy.md").read_text()
        self.assertIn(f"| all scored cases | {h['count']} | {h['median_abs_error'] * 100:.1f} % | "
                      f"{h['p90_abs_error'] * 100:.1f} % |", page)


class GeneratedCases(unittest.TestCase):
    def test_cases_json_is_what_the_rules_write(self):
        import cases_incoming
        doc = load_cases()
        records = load_records()
        rebuilt = cases_incoming.build(records, json.loads(json.dumps(doc)))
        self.assertEqual(rebuilt["cases"], doc["cases"], "cases.json is stale: run tools/accuracy/cases_incoming.py")
        self.assertEqual(rebuilt["skipped"], doc["skipped"])

    def test_every_record_has_a_framework_and_merged_records_keep_their_keys(self):
        incoming = {}
        for p in ("papers", "frameworks"):
            with open(os.path.join(HERE, "incoming", p + ".json")) as f:
                incoming.update({r["id"]: r for r in json.load(f)})
        for r in load_records():
            with self.subTest(record=r["id"]):
                self.assertTrue(r.get("framework"))
                self.assertNotIn("memfit_config", r)
                if r["id"] in incoming:
                    src = incoming[r["id"]]
                    for k in ("source", "quote", "confidence", "notes", "unstated", "model", "setup"):
                        self.assertEqual(r[k], src[k], k)
                    self.assertEqual(r["measured"]["value"], src["measured"]["value"])
                    self.assertTrue(str(src["measured"]["unit"]).startswith(str(r["measured"]["unit"])))
