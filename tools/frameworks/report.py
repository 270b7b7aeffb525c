#!/usr/bin/env python3
"""Markdown tables from out/measurements.json (memfit today beside the measurement).

    python3 tools/frameworks/report.py [out/measurements.json]   # plain python3 is enough
"""

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def fmt(n):
    return "–" if n is None else "{:,}".format(n)


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "out", "measurements.json")
    with open(path) as f:
        d = json.load(f)
    print("| case | body saved (CUDA-eq.) | memfit activations | memfit/measured | head saved | "
          "head fwd peak | memfit logits_and_loss | loop-held | step peak | memfit peak | memfit/measured |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for c in d["cases"]:
        if "measured" not in c:
            print("| %s | %s |" % (c["name"], c.get("error") or c.get("skipped")))
            continue
        m = c["measured"]
        s, tl, af = m["saved"], m["timeline"], m["after_forward"]
        mf = c.get("memfit_today") or {}
        act = mf.get("activations")
        body = s["body_bytes_cuda"]
        peak = m.get("step_peak_bytes")
        print("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            c["name"], fmt(body), fmt(act), "%.2f" % (act / body) if act else "–",
            fmt(s["head_bytes_cuda"]), fmt(tl.get("head_forward_peak_bytes")), fmt(mf.get("logits_and_loss")),
            fmt(af["loop_held_bytes"]), fmt(peak), fmt(mf.get("peak_allocated_bytes")),
            "%.2f" % (mf["peak_allocated_bytes"] / peak) if mf.get("peak_allocated_bytes") and peak else "–"))


if __name__ == "__main__":
    main()
