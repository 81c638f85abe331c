"""`lstmlm fidelity` on real third-party models of ../shared/data (docs/precision.md).

Each model is converted with tools/convert.py into a temporary directory, then:
  - fidelity --precision fp32 (fp32 against itself): KL exactly 0, top-1 agreement 1, and its perplexity is
    `lstmlm score`'s summary perplexity on the same text and options;
  - bf16 and int8: the acceptance thresholds (bf16 |dPPL|/PPL <= 0.5% and top-1 >= 99%; int8 <= 2% and
    >= 97%), at the kernel level the CPU picks.
"""
import json
import os
import shutil
import tempfile
import unittest

import pyutil

THRESHOLDS = {"bf16": (0.005, 0.99), "int8": (0.02, 0.97)}


class PrecisionFidelityTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="lstmlm_fidelity_")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def convert(self, name, source, *opts):
        out = os.path.join(self.tmp, name)
        pyutil.convert_ok(self, source, out, *opts)
        return out

    def text_file(self, name, lines):
        p = os.path.join(self.tmp, name)
        with open(p, "w", encoding="utf-8") as f:
            f.write("".join(l + "\n" for l in lines))
        return p

    def fidelity(self, model, precision, text, *opts):
        r = pyutil.run_lstmlm("fidelity", "-m", model, "--precision", precision, "--output-format", "jsonl", *opts,
                              text)
        return r, (json.loads(r.stdout) if r.returncode == 0 else None)

    def check_model(self, model, text, *opts):
        # fp32 against itself: exact, and score's perplexity.
        r, f = self.fidelity(model, "fp32", text, *opts)
        self.assertEqual(r.returncode, 0, r.stderr)
        s = pyutil.run_lstmlm("score", "-m", model, "-v", "summary", "--output-format", "jsonl", *opts, text)
        self.assertEqual(s.returncode, 0, s.stderr)
        summary = json.loads(s.stdout.splitlines()[-1])
        self.assertGreater(f["tokens"], 100)
        self.assertEqual(f["tokens"], summary["tokens"])
        self.assertEqual((f["mean_kl"], f["max_kl"], f["max_abs_dlogp"]), (0, 0, 0))
        self.assertEqual(f["top1_agreement"], 1)
        self.assertEqual(f["perplexity_ref"], summary["perplexity"])
        self.assertEqual(f["perplexity_low"], summary["perplexity"])
        for precision, (max_rel, min_top1) in THRESHOLDS.items():
            with self.subTest(precision=precision):
                r, f = self.fidelity(model, precision, text, *opts)
                if r.returncode == 2 and "--precision bf16: this CPU has no AVX-512" in r.stderr:
                    self.skipTest("bf16 is refused on this CPU: " + r.stderr.strip())
                self.assertEqual(r.returncode, 0, r.stderr)
                print(f"{os.path.basename(model)} {precision}: tokens {f['tokens']}, mean KL {f['mean_kl']:.3g}, "
                      f"max KL {f['max_kl']:.3g}, top-1 {100 * f['top1_agreement']:.3f}%, PPL "
                      f"{f['perplexity_ref']:.4f} -> {f['perplexity_low']:.4f} ({100 * f['delta_ppl_rel']:+.4f}%), "
                      f"{f['kernels_low']}", flush=True)
                self.assertTrue(f["kernels_low"].startswith(precision + "/"), f["kernels_low"])
                self.assertLessEqual(abs(f["delta_ppl_rel"]), max_rel)
                self.assertGreaterEqual(f["top1_agreement"], min_top1)

    def test_torch_word_language_model(self):
        # Tied, 2 layers, V 4934; its own test split, as one stream and line by line. Under the sanitizers
        # (20-30x slower) its first 80 of 400 lines, about 2,000 of its 10,005 words: the same code paths.
        d = pyutil.data("torch-wlm-fairytales")
        out = self.convert("wlm100", os.path.join(d, "model_epochs_25_logint_75_emsize_100_nhid_100_drop_05.pt"))
        text = os.path.join(d, "test.txt")
        if os.environ.get("LSTMLM_SANITIZED"):
            with open(text, encoding="utf-8") as f:
                text = self.text_file("wlm_test_part.txt", f.read().splitlines()[:80])
            print("sanitizer build: the first 80 lines of test.txt", flush=True)
        self.check_model(out, text, "--context", "document")
        self.check_model(out, text)

    def test_keras3_cs_nextword(self):
        # A Keras app's model: its default --pad-to input_length window, as score applies it.
        d = pyutil.data("keras3-cs-nextword")
        out = self.convert("cs", os.path.join(d, "next_word_model1.h5"), "--vocab", os.path.join(d, "tokenizer1.pkl"))
        with open(os.path.join(d, "cs_sentences_1000.txt"), encoding="utf-8") as f:
            lines = [l for l in f.read().splitlines() if l.strip()][:200]
        self.check_model(out, self.text_file("cs.txt", lines))

    def test_keras3_shakespeare_char(self):
        # A 2-layer char model (29 characters); lowercase prose without the characters it lacks.
        d = pyutil.data("keras3-shakespeare-char2")
        out = self.convert("shk", os.path.join(d, "shakespeare.h5"), "--vocab", os.path.join(d, "char_to_idx.json"))
        chars = set(pyutil.read_vocab(out))
        with open(os.path.join(pyutil.data("torch-wlm-fairytales"), "test.txt"), encoding="utf-8") as f:
            lines = ["".join(c for c in l.lower() if c in chars).strip() for l in f][:40]
        self.check_model(out, self.text_file("shk.txt", [l for l in lines if l]), "--context", "document")

    def test_keras3_ml_wordpred(self):
        # A one-layer word model (V 2118, H 100) on text outside its domain (fairy tales, not machine
        # learning): its decoder rows are heavy (max |w| > 3 rms), so int8 runs their residual plane.
        d = pyutil.data("keras3-ml-wordpred")
        out = self.convert("mlwp", os.path.join(d, "word_prediction_model.h5"), "--vocab",
                           os.path.join(d, "word_index.json"))
        with open(os.path.join(pyutil.data("torch-wlm-fairytales"), "valid.txt"), encoding="utf-8") as f:
            lines = f.read().splitlines()[:200]
        self.check_model(out, self.text_file("mlwp.txt", lines))


if __name__ == "__main__":
    unittest.main()
