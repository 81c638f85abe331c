"""A Keras weights-only file (save_weights) records no input shape: converted, the model runs stateful where the
app may have fed a fixed window. The converter says so in a note naming --input-length, and --input-length N
writes config.json input_length N, so the model runs exactly as the full model file (which records N) does."""
import os
import unittest
import zipfile

import pyutil

TMP = pyutil.temp_root("lstmlm_input_length_")


class WeightsOnlyInputLength(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        d = pyutil.data("keras3-cs-nextword")
        cls.full_src = os.path.join(d, "next_word_model1.h5")
        cls.vocab = os.path.join(d, "tokenizer1.pkl")
        # Keras 3 model.save_weights("x.weights.h5") writes what the .keras zip holds as model.weights.h5.
        cls.weights = os.path.join(TMP, "m.weights.h5")
        with zipfile.ZipFile(os.path.join(d, "next_word_model1.keras")) as z, open(cls.weights, "wb") as f:
            f.write(z.read("model.weights.h5"))
        cls.full = os.path.join(TMP, "full")
        r = pyutil.convert(cls.full_src, cls.full, "--vocab", cls.vocab)
        assert r.returncode == 0, r.stderr
        cls.full_stderr = r.stderr

    def convert(self, name, *opts):
        out = os.path.join(TMP, name)
        r = pyutil.convert(self.weights, out, "--vocab", self.vocab, "--recurrent-activation", "sigmoid", *opts)
        self.assertEqual(r.returncode, 0, r.stderr)
        return out, r.stderr

    def test_weights_only_gets_a_note_naming_the_option(self):
        out, err = self.convert("plain")
        self.assertIn("lstmlm-convert: note: m.weights.h5 is weights only and records no input length", err)
        self.assertIn("--input-length N", err)
        self.assertNotIn("input_length", pyutil.read_config(out))
        # The full model records its window: no note.
        self.assertEqual(pyutil.read_config(self.full)["input_length"], 9)
        self.assertNotIn("--input-length", self.full_stderr)

    def test_input_length_sets_the_window_of_the_full_model(self):
        out, err = self.convert("nine", "--input-length", "9")
        self.assertNotIn("--input-length", err)
        self.assertEqual(pyutil.read_config(out)["input_length"], 9)
        # The same numbers as the full model's, with its default --pad-to 9 window.
        contexts = ["i am going to the", "what is"]
        a = pyutil.run_lstmlm("predict", "-m", out, "--top", "5", "--output-format", "jsonl", *contexts)
        b = pyutil.run_lstmlm("predict", "-m", self.full, "--top", "5", "--output-format", "jsonl", *contexts)
        self.assertEqual(a.returncode, 0, a.stderr)
        self.assertEqual(a.stdout, b.stdout)
        self.assertIn("input_length 9", a.stderr)

    def test_input_length_out_of_range_is_refused(self):
        r = pyutil.convert(self.weights, os.path.join(TMP, "bad"), "--vocab", self.vocab, "--recurrent-activation",
                           "sigmoid", "--input-length", "0")
        self.assertEqual(r.returncode, 1)
        self.assertEqual(r.stderr.count("\n"), 1, r.stderr)
        self.assertIn("--input-length 0 is not in [1, 1000000]", r.stderr)


if __name__ == "__main__":
    unittest.main()
