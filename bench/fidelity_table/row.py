#!/usr/bin/python3
# row.py LABEL FIDELITY_JSONL...: one markdown row per `lstmlm fidelity --output-format jsonl` file (a miss in bold)
import json, sys
label = sys.argv[1]
TH = {"bf16": (0.005, 0.99), "int8": (0.02, 0.97)}
for p in sys.argv[2:]:
    f = json.loads(open(p).read())
    pr = f["precision"]; mr, mt = TH[pr]
    t1 = f"{100*f['top1_agreement']:.2f}%"
    if f['top1_agreement'] < mt: t1 = f"**{t1}**"
    d = f"{100*f['delta_ppl_rel']:+.3f}%"
    if abs(f['delta_ppl_rel']) > mr: d = f"**{d}**"
    def g(x): return f"{x:.0f}" if x >= 10 else (f"{x:.2f}" if x >= 1 else f"{x:.2g}")
    def h(x): return f"{x:.0f}" if x >= 100 else f"{x:.3g}"
    def ppl(x): return f"{x:.0f}" if x > 1e5 else f"{x:.4f}"
    print(f"| {label} | {pr} | {f['tokens']} | {f['mean_kl']:.1e} | {g(f['max_kl'])} | {h(f['max_abs_dlogp'])} | {t1} | "
          f"{ppl(f['perplexity_ref'])} → {ppl(f['perplexity_low'])} | {d} |")
