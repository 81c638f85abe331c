"""TF1 checkpoint reader and converter, proven on the two real char-rnn checkpoints in ../shared/data.

Reference numbers come from tf1_reference.py: an independent float64 numpy implementation of TF1's cell
math on the checkpoint's own tensors (TF layout, gate order i, j, f, o, forget_bias added at run time).
The converted model is checked against it twice: through PyTorch's nn.LSTM on the converted weights
(validates the layout conversion on its own) and through `lstmlm predict` (the agreed CLI interface).
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import numpy as np

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # tests/py: the helpers
SOURCE_DIR = os.environ.get("LSTMLM_SOURCE_DIR", os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)

import pyutil  # noqa: E402  (first: it puts the package lstmlm on the path)
from lstmlm.convert import common, tf1  # noqa: E402
from lstmlm.convert.tf1_checkpoint import Checkpoint, ConvertError, crc32c, mask_crc  # noqa: E402
from lstmlm.format import write_model  # noqa: E402
from tf1_ckpt_writer import write_checkpoint  # noqa: E402
from tf1_reference import TF1CharRNN  # noqa: E402

DATA = os.path.join(SOURCE_DIR, "..", "shared", "data")
SPACE = os.path.join(DATA, "tf1-charrnn-space")
ART = os.path.join(DATA, "tf012-charrnn-artclasses")
SPACE_PREFIX = os.path.join(SPACE, "model.ckpt-248399")
ART_PREFIX = os.path.join(ART, "model.ckpt-46499")


def need_data(path):
    if not os.path.exists(path):
        print(f"skipping: {path} is absent (the real-model data lives in ../shared/data)")
        raise unittest.SkipTest(f"{path} absent")


def options(**kw):
    p = argparse.ArgumentParser()
    common.add_common_arguments(p)
    tf1.add_arguments(p)
    a = p.parse_args([])
    for k, v in kw.items():
        setattr(a, k, v)
    return a


def reference_from_checkpoint(prefix, kw, forget_bias=1.0, cell_clip=None):
    """The numpy TF1 model on the raw checkpoint tensors, using the variable names the converter chose."""
    ck = Checkpoint(prefix)
    names = kw["source"]["variables"]
    cells = [{part: ck.tensor(name) for part, name in c.items()} for c in names["cells"]]
    return TF1CharRNN(ck.tensor(names["embedding"]), cells, ck.tensor(names["softmax_w"]),
                      ck.tensor(names["softmax_b"]), forget_bias=forget_bias, cell_clip=cell_clip)


def torch_logprobs(kw, ids):
    """Next-token log-probs of the converted tensors run through PyTorch's own nn.LSTM in float64."""
    import torch
    t = {k: torch.tensor(np.asarray(v), dtype=torch.float64) for k, v in kw["tensors"].items()}
    x = t["embedding.weight"][torch.tensor(ids)].unsqueeze(1)
    for k, layer in enumerate(kw["layers"]):
        lstm = torch.nn.LSTM(x.shape[-1], layer["hidden_size"], proj_size=layer["proj_size"]).double()
        sd = {"weight_ih_l0": t[f"lstm.weight_ih_l{k}"], "weight_hh_l0": t[f"lstm.weight_hh_l{k}"],
              "bias_ih_l0": t[f"lstm.bias_ih_l{k}"], "bias_hh_l0": torch.zeros_like(t[f"lstm.bias_ih_l{k}"])}
        if layer["proj_size"]:
            sd["weight_hr_l0"] = t[f"lstm.weight_hr_l{k}"]
        lstm.load_state_dict(sd)
        with torch.no_grad():
            x, _ = lstm(x)
    logits = x.squeeze(1) @ t["decoder.weight"].T + t["decoder.bias"]
    return torch.log_softmax(logits, -1).numpy()


def cli_logprobs(model_dir, ids):
    """[len(ids), V] log-probs from `lstmlm predict --ids`, one context per prefix of ids."""
    return np.array(pyutil.predict_logprobs(model_dir, [ids[:n] for n in range(1, len(ids) + 1)]))


def encode(vocab, text):
    ids = {t: i for i, t in enumerate(vocab)}
    return [ids[ch] for ch in text]


class Crc32cTest(unittest.TestCase):
    def test_check_value(self):
        # The CRC-32C check value of "123456789" (RFC 3720 / iSCSI) is 0xE3069283.
        self.assertEqual(crc32c(b"123456789"), 0xE3069283)
        self.assertEqual(crc32c(b""), 0)

    def test_mask_roundtrip(self):
        # LevelDB's unmask: rot = masked - 0xa282ead8; crc = (rot >> 17) | (rot << 15).
        crc = crc32c(b"lstmlm")
        rot = (mask_crc(crc) - 0xA282EAD8) & 0xFFFFFFFF
        self.assertEqual(((rot >> 17) | (rot << 15)) & 0xFFFFFFFF, crc)


class SyntheticCheckpointTest(unittest.TestCase):
    """Naming eras and cell options the two real checkpoints do not cover, on small written checkpoints."""

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="lstmlm_tf1_")
        self.rng = np.random.default_rng(7)

    def tearDown(self):
        shutil.rmtree(self.dir)

    def r(self, *shape):
        return self.rng.normal(0, 0.5, shape).astype(np.float32)

    def write(self, tensors):
        prefix = os.path.join(self.dir, "model.ckpt-1")
        write_checkpoint(prefix, tensors)
        return prefix

    def check_against_reference(self, prefix, n_vocab, forget_bias=1.0, cell_clip=None, **kw):
        import pickle
        vocab = [chr(ord("a") + i) for i in range(n_vocab)]
        with open(os.path.join(self.dir, "chars_vocab.pkl"), "wb") as f:
            pickle.dump((tuple(vocab), {c: i for i, c in enumerate(vocab)}), f)
        out = tf1.convert(prefix, options(forget_bias=forget_bias, cell_clip=cell_clip, **kw))
        ref = reference_from_checkpoint(prefix, out, forget_bias, cell_clip)
        ids = [1, 4, 0, 3, 3, 2]
        if cell_clip is None:  # nn.LSTM has no cell clip; the clipped model is checked through lstmlm only
            np.testing.assert_allclose(torch_logprobs(out, ids), ref.next_logprobs(ids), atol=1e-5)
        model_dir = os.path.join(self.dir, "out")
        write_model(model_dir, **out)
        np.testing.assert_allclose(cli_logprobs(model_dir, ids), ref.next_logprobs(ids), atol=1e-4, rtol=0)
        return out

    def test_single_basic_lstm_cell_kernel_era(self):
        # TF >= 1.3 single cell: rnn/basic_lstm_cell/kernel; forget_bias 0.5 given as an option.
        t = {"embedding": self.r(5, 3), "rnn/basic_lstm_cell/kernel": self.r(3 + 4, 16),
             "rnn/basic_lstm_cell/bias": self.r(16), "softmax_w": self.r(4, 5), "softmax_b": self.r(5),
             "rnn/basic_lstm_cell/kernel/Adam": self.r(7, 16), "global_step": np.zeros(())}
        out = self.check_against_reference(self.write(t), 5, forget_bias=0.5)
        self.assertEqual([l["hidden_size"] for l in out["layers"]], [4])
        self.assertEqual(out["source"]["variables"]["embedding"], "embedding")

    def test_lstm_cell_projection_and_clip(self):
        # LSTMCell(num_units=6, num_proj=3, cell_clip=0.3): kernel [in + proj, 4H], projection/kernel [H, P].
        t = {"lm/embedding": self.r(5, 2)}
        for k, n_in in enumerate((2, 3)):
            t[f"lm/multi_rnn_cell/cell_{k}/lstm_cell/kernel"] = self.r(n_in + 3, 24)
            t[f"lm/multi_rnn_cell/cell_{k}/lstm_cell/bias"] = self.r(24)
            t[f"lm/multi_rnn_cell/cell_{k}/lstm_cell/projection/kernel"] = self.r(6, 3)
        t["lm/softmax_w"], t["lm/softmax_b"] = self.r(3, 5), self.r(5)
        prefix = self.write(t)
        self.check_against_reference(prefix, 5)
        # The clip must bite on these weights, or comparing the clipped model would prove nothing.
        kw = tf1.convert(prefix, options())
        ids = [1, 4, 0, 3]
        unclipped = reference_from_checkpoint(prefix, kw).next_logprobs(ids)
        clipped = reference_from_checkpoint(prefix, kw, cell_clip=0.3).next_logprobs(ids)
        self.assertGreater(np.abs(clipped - unclipped).max(), 1e-3)
        out = self.check_against_reference(prefix, 5, cell_clip=0.3)
        self.assertEqual([(l["hidden_size"], l["proj_size"], l["cell_clip"]) for l in out["layers"]],
                         [(6, 3, 0.3), (6, 3, 0.3)])
        self.assertEqual(out["tensors"]["lstm.weight_hr_l1"].shape, (3, 6))

    def test_tf10_weights_biases_era(self):
        t = {"embedding": self.r(5, 3), "rnnlm/multi_rnn_cell/cell_0/basic_lstm_cell/weights": self.r(7, 16),
             "rnnlm/multi_rnn_cell/cell_0/basic_lstm_cell/biases": self.r(16),
             "rnnlm/softmax_w": self.r(4, 5), "rnnlm/softmax_b": self.r(5)}
        self.check_against_reference(self.write(t), 5)

    def test_peepholes_refused(self):
        t = {"embedding": self.r(5, 3), "rnn/lstm_cell/kernel": self.r(7, 16), "rnn/lstm_cell/bias": self.r(16),
             "rnn/lstm_cell/w_f_diag": self.r(4), "softmax_w": self.r(4, 5), "softmax_b": self.r(5)}
        with self.assertRaisesRegex(ConvertError, r"w_f_diag.*peephole"):
            tf1.convert(self.write(t), options())

    def test_ambiguous_embedding_needs_option(self):
        t = {"a/embedding": self.r(5, 3), "b/embedding": self.r(5, 3), "rnn/lstm_cell/kernel": self.r(7, 16),
             "rnn/lstm_cell/bias": self.r(16), "softmax_w": self.r(4, 5), "softmax_b": self.r(5)}
        prefix = self.write(t)
        with self.assertRaisesRegex(ConvertError, r"several embedding candidates.*--embedding-var"):
            tf1.convert(prefix, options())
        self.check_against_reference(prefix, 5, embedding_var="b/embedding")

    def test_kernel_rows_checked(self):
        t = {"embedding": self.r(5, 3), "rnn/lstm_cell/kernel": self.r(8, 16), "rnn/lstm_cell/bias": self.r(16),
             "softmax_w": self.r(4, 5), "softmax_b": self.r(5)}
        with self.assertRaisesRegex(ConvertError, r"8 rows, expected input 3 \+ state 4 = 7"):
            tf1.convert(self.write(t), options())


class ReaderCorruptionTest(unittest.TestCase):
    def setUp(self):
        need_data(SPACE)
        self.dir = tempfile.mkdtemp(prefix="lstmlm_tf1_")
        self.prefix = os.path.join(self.dir, "model.ckpt-248399")
        for ext in (".index", ".data-00000-of-00001"):
            shutil.copyfile(SPACE_PREFIX + ext, self.prefix + ext)

    def tearDown(self):
        shutil.rmtree(self.dir)

    def test_flipped_data_byte_fails_crc(self):
        ck = Checkpoint(self.prefix)
        e = ck.entries["rnnlm/multi_rnn_cell/cell_1/lstm_cell/kernel"]
        path = self.prefix + ".data-00000-of-00001"
        with open(path, "r+b") as f:
            f.seek(e.offset + e.size // 2)
            b = f.read(1)
            f.seek(e.offset + e.size // 2)
            f.write(bytes([b[0] ^ 0x01]))
        ck = Checkpoint(self.prefix)
        ck.tensor("rnnlm/softmax_w")  # untouched tensors still read
        with self.assertRaisesRegex(ConvertError, r"data-00000-of-00001: variable "
                                    r"'rnnlm/multi_rnn_cell/cell_1/lstm_cell/kernel' fails its crc32c check"):
            ck.tensor("rnnlm/multi_rnn_cell/cell_1/lstm_cell/kernel")

    def test_flipped_index_byte_fails_block_crc(self):
        with open(self.prefix + ".index", "r+b") as f:
            f.seek(100)
            b = f.read(1)
            f.seek(100)
            f.write(bytes([b[0] ^ 0x20]))
        with self.assertRaisesRegex(ConvertError, r"model.ckpt-248399.index: block at offset 0 fails its crc32c"):
            Checkpoint(self.prefix)

    def test_truncated_index_names_the_file(self):
        size = os.path.getsize(self.prefix + ".index")
        for keep in (size - 1, size // 2, 10):
            with open(SPACE_PREFIX + ".index", "rb") as f:
                data = f.read(keep)
            with open(self.prefix + ".index", "wb") as f:
                f.write(data)
            with self.assertRaisesRegex(ConvertError, r"model.ckpt-248399.index: .*truncated"):
                Checkpoint(self.prefix)

    def test_truncated_data_names_the_shard(self):
        path = self.prefix + ".data-00000-of-00001"
        os.truncate(path, os.path.getsize(path) - 100)
        ck = Checkpoint(self.prefix)
        last = max(ck.entries.values(), key=lambda e: e.offset)
        with self.assertRaisesRegex(ConvertError, r"data-00000-of-00001: variable .* runs past the end"):
            ck.tensor(last.name)


class RealCheckpointTest(unittest.TestCase):
    # Sequences in each model's own vocabulary (from its own training text's domain).
    SEQS = {
        SPACE: ["The planet Mars is the fourth", "\u201cSpace\u201d \u2014 \u00a3", "orbit\r\nof the moon"],
        ART: ["ART 101. Signifying Practices", "painting and drawing. ", "4 hours. Prerequisite: "],
    }

    def convert(self, folder, prefix, **opts):
        need_data(folder)
        kw = tf1.convert(prefix, options(**opts))
        return kw

    def test_space_lstmcell_era(self):
        kw = self.convert(SPACE, SPACE)  # the directory form: its `checkpoint` file names the prefix
        self.assertEqual(kw["source"]["cells"], ["lstm", "lstm"])
        self.assertEqual(len(kw["vocab"]), 103)
        self.assertEqual(kw["tokenizer"]["type"], "char")
        self.check_model(SPACE, SPACE_PREFIX, kw)

    def test_artclasses_tf012_era(self):
        kw = self.convert(ART, ART_PREFIX, vocab=os.path.join(ART, "artclasses_vocab.pkl"))
        self.assertEqual(kw["source"]["cells"], ["basic", "basic"])
        self.assertEqual(kw["source"]["variables"]["cells"][0]["kernel"],
                         "rnnlm/MultiRNNCell/Cell0/BasicLSTMCell/Linear/Matrix")
        self.assertEqual(len(kw["vocab"]), 67)
        self.check_model(ART, ART_PREFIX, kw)

    def test_artclasses_stale_vocab_refused(self):
        # The repo's save/chars_vocab.pkl belongs to model.ckpt-0 (65 chars), not to this checkpoint (67).
        with self.assertRaisesRegex(ConvertError, r"chars_vocab.pkl: 65 tokens, but .* 67 rows"):
            self.convert(ART, ART_PREFIX)

    def test_convert_py_entry_point(self):
        need_data(ART)
        convert = [sys.executable, os.path.join(SOURCE_DIR, "tools", "convert.py")]
        with tempfile.TemporaryDirectory() as out:
            r = subprocess.run(convert + [ART_PREFIX, out], capture_output=True, text=True)
            self.assertEqual(r.returncode, 1, r.stderr)
            self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
            self.assertIn("chars_vocab.pkl: 65 tokens", r.stderr)
            r = subprocess.run(convert + [ART_PREFIX + ".index", out, "--vocab",
                                          os.path.join(ART, "artclasses_vocab.pkl")], capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stderr)
            with open(os.path.join(out, "config.json"), encoding="utf-8") as f:
                config = json.load(f)
            self.assertEqual((config["vocab_size"], config["tokenizer"]["type"]), (67, "char"))

    def test_reference_fits_training_text(self):
        # Sanity of the reference itself (a wrong gate order or forget_bias would not give a low NLL):
        # SOURCE.md reports ~0.20 nats/char for artclasses on its own input.
        kw = self.convert(ART, ART_PREFIX, vocab=os.path.join(ART, "artclasses_vocab.pkl"))
        with open(os.path.join(ART, "artclasses_input.txt"), encoding="utf-8") as f:
            text = f.read()[:400]
        ids = encode(kw["vocab"], text)
        lp = reference_from_checkpoint(ART_PREFIX, kw).next_logprobs(ids)
        nll = -np.mean([lp[t, ids[t + 1]] for t in range(len(ids) - 1)])
        self.assertLess(nll, 0.5)
        wrong = reference_from_checkpoint(ART_PREFIX, kw, forget_bias=0.0).next_logprobs(ids)
        self.assertGreater(-np.mean([wrong[t, ids[t + 1]] for t in range(len(ids) - 1)]), nll)

    def check_model(self, folder, prefix, kw):
        ref = reference_from_checkpoint(prefix, kw)
        seqs = [encode(kw["vocab"], s) for s in self.SEQS[folder]]
        for ids in seqs:
            np.testing.assert_allclose(torch_logprobs(kw, ids), ref.next_logprobs(ids), atol=1e-5)
        out = tempfile.mkdtemp(prefix="lstmlm_tf1_")
        try:
            write_model(out, **kw)
            for ids in seqs:
                got = cli_logprobs(out, ids)
                np.testing.assert_allclose(got, ref.next_logprobs(ids), atol=1e-4, rtol=0)
        finally:
            shutil.rmtree(out)


class CharDocumentNewlineTest(unittest.TestCase):
    """`score --context document` on char-rnn's own training text must feed the line breaks, as
    char-rnn trained on the file's characters ("\\n" included, no eos): every character's log-prob equals the
    float64 TF1 reference over the whole text's ids, and so does the perplexity (1.2233; 1.4545 when the
    lines were joined without "\\n")."""

    def test_training_text_perplexity_with_newlines(self):
        need_data(ART)
        kw = tf1.convert(ART_PREFIX, options(vocab=os.path.join(ART, "artclasses_vocab.pkl")))
        path = os.path.join(ART, "artclasses_input.txt")
        with open(path, encoding="utf-8") as f:
            text = f.read()
        self.assertTrue(text.endswith("\n"))  # so the document's stream is exactly the file's characters
        ids = encode(kw["vocab"], text)
        lp = reference_from_checkpoint(ART_PREFIX, kw).next_logprobs(ids)
        want = np.array([lp[t, ids[t + 1]] for t in range(len(ids) - 1)])
        with tempfile.TemporaryDirectory() as out:
            write_model(out, **kw)
            r = pyutil.run_lstmlm("score", "-m", out, "--context", "document", "--output-format", "jsonl", path)
        self.assertEqual(r.returncode, 0, r.stderr)
        records = [json.loads(line) for line in r.stdout.splitlines()]
        words = [w for rec in records if rec["type"] == "line" for w in rec["words"]]
        self.assertEqual([w["id"] for w in words], ids)  # the line breaks are fed as "\n" tokens
        self.assertIsNone(words[0]["logprob"])  # no bos/eos: the first character is context only
        got = np.array([w["logprob"] for w in words[1:]])
        np.testing.assert_allclose(got, want, atol=1e-4, rtol=0)
        summary = records[-1]
        self.assertEqual(summary["tokens"], len(want))
        self.assertAlmostEqual(summary["perplexity"], float(np.exp(-want.mean())), places=4)
        self.assertAlmostEqual(summary["perplexity"], 1.2233, places=4)


if __name__ == "__main__":
    unittest.main()
