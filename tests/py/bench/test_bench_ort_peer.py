"""bench/compare's ONNX Runtime peer without ONNX Runtime (npm packages are the benchmark's, never the tests'):
the ORT targets table on synthetic cells, and bench/ort/export_onnx.py's int8 rewrite checked by evaluating the
rewritten graph's arithmetic with numpy against the quantization ORT documents (DynamicQuantizeLSTM's int8 weights
and scales; DynamicQuantizeLinear + MatMulInteger for the decoder). Skipped parts name their reason (no torch, no
onnx)."""
import os
import shutil
import sys
import tempfile
import unittest

import pyutil

import numpy as np

SOURCE_DIR = os.environ.get("LSTMLM_SOURCE_DIR") or os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..")
BENCH = os.path.join(SOURCE_DIR, "bench")


compare = pyutil.load_script("bench_compare_ort", os.path.join(BENCH, "compare"))
export_onnx = pyutil.load_script("bench_export_onnx", os.path.join(BENCH, "ort", "export_onnx.py"))


def cell(shape, workload, batch, threads, ours, ort, int8=None):
    """A cell as compare's main() builds it, with ORT's fp32 rounds (ours/ort: tokens/s per round) and optionally
    int8 ({ours: [...], ort: [...], ort_threads: n})."""
    ratio = compare.ratio_stats(ours, ort)
    c = {"shape": shape, "workload": workload, "batch": batch, "threads": threads,
         "ours_tps": float(np.median(ours)), "tps": {"lstmlm": float(np.median(ours)), "ort": float(np.median(ort))},
         "ort_overhead_us": 9.5, "ort_ratio": ratio[0], "ort_ratio_range": ratio[1], "lowp": {}}
    if int8:
        r = compare.ratio_stats(int8["ours"], int8["ort"])
        c["lowp"]["int8"] = {"ours_tps": float(np.median(int8["ours"])), "unavailable": {},
                             "peers": {"ort": {"tps": float(np.median(int8["ort"])), "threads": int8["ort_threads"],
                                               "ratio": r[0], "ratio_range": r[1]}}}
    return c


class OrtTargets(unittest.TestCase):
    def rows(self, cells, shapes=("SEED",)):
        lines = compare.ort_rows(cells, list(shapes), ["SEED: largest difference from lstmlm 1e-06"], "CPU: test")
        return {tuple(x.strip() for x in l.split("|")[1:6]): l for l in lines if l.startswith("| SEED")
                or l.startswith("| PKRUPEE")}

    def test_met_missed_and_not_run(self):
        cells = [cell("SEED", "score", 1, 1, [300, 330], [100, 100]),        # 3.0x and 3.3x: met
                 cell("SEED", "score", 64, 1, [170, 200], [100, 100],         # 1.7x, 2.0x: median 1.85, not every round
                      int8={"ours": [150, 150], "ort": [100, 100], "ort_threads": 1}),  # 1.5x < 2x: missed
                 cell("SEED", "predict", 1, 2, [250, 250], [100, 100])]       # 2.5x < 3x: missed
        rows = self.rows(cells)
        # One row per target of TARGETS_ORT on 1 and 2 threads for a shape that runs score and predict.
        self.assertEqual(len(rows), 2 * len(compare.TARGETS_ORT))
        self.assertIn("3.15x (3.00-3.30) | yes |", rows[("SEED", "score", "1", "1", "fp32")])
        self.assertIn("| yes (not in every round) |", rows[("SEED", "score", "64", "1", "fp32")])
        self.assertIn("1.50x (1.50-1.50) | **no** |", rows[("SEED", "score", "64", "1", "int8")])
        self.assertIn("2.50x (2.50-2.50) | **no** |", rows[("SEED", "predict", "1", "2", "fp32")])
        self.assertIn("| not run | - |", rows[("SEED", "predict", "64", "2", "fp32")])

    def test_user_model_has_predict_fp32_only(self):
        rows = self.rows([cell("PKRUPEE", "predict", 1, 1, [400, 400], [100, 100])], shapes=("PKRUPEE",))
        self.assertEqual(sorted({k[1] for k in rows}), ["predict"])
        self.assertEqual(sorted({k[4] for k in rows}), ["fp32"])
        self.assertIn("4.00x", rows[("PKRUPEE", "predict", "1", "1", "fp32")])


class SymmetricInt8(unittest.TestCase):
    def test_per_row_scale_and_rounding(self):
        w = np.array([[0.5, -1.0, 0.25], [0.0, 0.0, 0.0]], np.float32)
        q, s = export_onnx.symmetric_int8(w, 0)
        # Row 0: scale 1/127, values round(0.5*127) = 64 (63.5 rounds to even: 64), -127, round(31.75) = 32.
        self.assertEqual(q[0].tolist(), [64, -127, 32])
        self.assertAlmostEqual(float(s[0]), 1 / 127, places=7)
        # An all-zero row keeps scale 1 (no division by zero) and zeros.
        self.assertEqual(q[1].tolist(), [0, 0, 0])
        self.assertEqual(float(s[1]), 1.0)


def have(module):
    try:
        __import__(module)
        return True
    except ImportError:
        return False


@unittest.skipUnless(have("torch") and have("onnx"), "needs python3-torch and python3-onnx")
class Int8Rewrite(unittest.TestCase):
    """The rewritten graph against the fp32 graph it came from: every LSTM became a DynamicQuantizeLSTM whose
    dequantized weights (int8 x scale, transposed back) are within half a step of the fp32 ones, and every MatMul
    on a weight became DynamicQuantizeLinear -> MatMulInteger -> Cast -> Mul."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="lstmlm_ort_")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_rewrite(self):
        import onnx
        from onnx import numpy_helper
        sys.path.insert(0, os.path.join(SOURCE_DIR, "python"))
        _, _, predict, _ = export_onnx.torch_model(30, 8, 6, 2, 3)
        import torch
        src, dst = os.path.join(self.tmp, "p.onnx"), os.path.join(self.tmp, "p-int8.onnx")
        export_onnx.export(predict, (torch.zeros(1, 2, dtype=torch.long),), src, ["ids"], ["logprobs"],
                           {"ids": {0: "b", 1: "t"}})
        export_onnx.quantize(src, dst)
        f, q = onnx.load(src), onnx.load(dst)
        ops = [n.op_type for n in q.graph.node]
        self.assertNotIn("LSTM", ops)
        self.assertEqual(ops.count("DynamicQuantizeLSTM"), 2)
        self.assertEqual([o for o in ops if o in ("DynamicQuantizeLinear", "MatMulInteger", "Cast")],
                         ["DynamicQuantizeLinear", "MatMulInteger", "Cast"])
        init = {i.name: numpy_helper.to_array(i) for i in q.graph.initializer}
        finit = {i.name: numpy_helper.to_array(i) for i in f.graph.initializer}
        fconst = {n.output[0]: numpy_helper.to_array(n.attribute[0].t) for n in f.graph.node if n.op_type == "Constant"}
        lstms = [n for n in f.graph.node if n.op_type == "LSTM"]
        for fn, qn in zip(lstms, [n for n in q.graph.node if n.op_type == "DynamicQuantizeLSTM"]):
            for k, (wname, qname, sname) in enumerate(((fn.input[1], qn.input[1], qn.input[8]),
                                                        (fn.input[2], qn.input[2], qn.input[10]))):
                w = finit.get(wname, fconst.get(wname))
                wq, s = init[qname], init[sname]
                self.assertEqual(wq.dtype, np.int8)
                self.assertEqual(wq.shape, (w.shape[0], w.shape[2], w.shape[1]))  # [dir, in, 4H]
                back = wq.transpose(0, 2, 1).astype(np.float64) * s[:, :, None]
                self.assertLessEqual(np.abs(back - w).max(), 0.5 * s.max() + 1e-7)
