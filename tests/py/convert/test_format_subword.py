"""lstmlm.format for subword models (format v4): sentencepiece_tokenizer / bpe_tokenizer configs, the `assets`
argument of write_model (the SentencePiece .model file written into the model directory), what check_config
accepts and refuses for the new tokenizer types, and that a failure at any point leaves outdir as it was.
With the CLI (ctest sets LSTMLM_CLI) and a build that reads format v4: `lstmlm info` loads what is written."""
import json
import os
import tempfile
import unittest
from unittest import mock

import numpy as np

import pyutil
import lstmlm.format as fmt

TMP = pyutil.temp_root("lstmlm_format_subword_")
VOCAB = ["<unk>", "<s>", "</s>", "\u2581a", "b"]
SPM_MODEL = os.path.join(pyutil.DATA, "spm-google-test-model-botchan", "test_model.model")


def tensors(V=len(VOCAB)):
    """V tokens, E=2, H=1, one LSTM layer: a valid model's tensors under the spec's names."""
    n = fmt.names
    rng = np.random.default_rng(0)
    return {n.embedding: rng.normal(size=(V, 2)), n.weight_ih(0): rng.normal(size=(4, 2)),
            n.weight_hh(0): rng.normal(size=(4, 1)), n.bias_ih(0): np.zeros(4),
            n.decoder_weight: rng.normal(size=(V, 1)), n.decoder_bias: np.zeros(V)}


def write(outdir, tokenizer, assets=None, vocab=VOCAB, **kwargs):
    fmt.write_model(outdir, vocab=vocab, embedding_dim=2, layers=[fmt.layer(1)], tied=False, tokenizer=tokenizer,
                    tensors=tensors(len(vocab)), source={"exporter": "test"}, assets=assets, **kwargs)


def snapshot(d):
    """{file name: bytes} of a directory (its state, to compare before and after a failed write)."""
    out = {}
    for name in sorted(os.listdir(d)):
        with open(os.path.join(d, name), "rb") as f:
            out[name] = f.read()
    return out


def spm_tokenizer(**kw):
    return fmt.sentencepiece_tokenizer(unk_token="<unk>", bos_token="<s>", eos_token="</s>", **kw)


class SubwordConfigTest(unittest.TestCase):
    def test_sentencepiece_round_trip(self):
        d = os.path.join(tempfile.mkdtemp(dir=TMP), "spm")
        data = b"\x0a\x03abc not really a model"
        write(d, spm_tokenizer(), assets={"tokenizer.model": data})
        self.assertEqual(sorted(os.listdir(d)), ["config.json", "tokenizer.model", "vocab.json", "weights.safetensors"])
        self.assertEqual(snapshot(d)["tokenizer.model"], data)
        cfg = pyutil.read_config(d)
        self.assertEqual(cfg["format_version"], 4)
        self.assertEqual(cfg["tokenizer"], {"type": "sentencepiece", "model": "tokenizer.model", "lowercase": False,
                                            "unk_token": "<unk>", "eos_token": "</s>", "bos_token": "<s>"})
        self.assertEqual(pyutil.read_vocab(d), VOCAB)
        fmt.check_config(cfg)  # what was written passes the writer's own check

    def test_absent_specials_and_pad_id_are_left_out(self):
        d = os.path.join(tempfile.mkdtemp(dir=TMP), "spm")
        write(d, fmt.sentencepiece_tokenizer(unk_token="<unk>", pad_id=0), assets={"tokenizer.model": b"x"})
        self.assertEqual(pyutil.read_config(d)["tokenizer"], {"type": "sentencepiece", "model": "tokenizer.model",
                                                              "lowercase": False, "unk_token": "<unk>", "pad_id": 0})

    def test_bpe_round_trip(self):
        d = os.path.join(tempfile.mkdtemp(dir=TMP), "bpe")
        vocab = ["<unk>", "</s>", "qu@@", "ick", "the"]
        write(d, fmt.bpe_tokenizer(unk_token="<unk>", eos_token="</s>"), vocab=vocab)
        cfg = pyutil.read_config(d)
        self.assertEqual(cfg["format_version"], 4)
        self.assertEqual(cfg["tokenizer"], {"type": "bpe", "continuation": "@@", "lowercase": False,
                                            "unk_token": "<unk>", "eos_token": "</s>"})
        self.assertEqual(sorted(os.listdir(d)), ["config.json", "vocab.json", "weights.safetensors"])

    def test_word_models_keep_their_version(self):
        d = os.path.join(tempfile.mkdtemp(dir=TMP), "word")
        write(d, fmt.tokenizer("word"))
        self.assertEqual(pyutil.read_config(d)["format_version"], 1)
        d = os.path.join(tempfile.mkdtemp(dir=TMP), "word-asset")
        write(d, fmt.tokenizer("word"), assets={"notes.txt": b"kept"})  # an asset alone does not need v4
        self.assertEqual(pyutil.read_config(d)["format_version"], 1)
        self.assertEqual(snapshot(d)["notes.txt"], b"kept")
        self.assertEqual(fmt.LATEST_FORMAT_VERSION, 5)

    def test_refused_asset_names(self):
        for bad in ("", ".", "..", "../x.model", "a/b.model", "/etc/passwd", "a\\b.model", "x..model", "a\nb",
                    "a\x00b", "config.json", "vocab.json", "weights.safetensors", "x" * 256, 5):
            with self.subTest(name=bad):
                d = os.path.join(tempfile.mkdtemp(dir=TMP), "out")
                with self.assertRaises(ValueError) as cm:
                    write(d, fmt.tokenizer("word"), assets={bad: b"data"})
                self.assertIn("asset", str(cm.exception))
                self.assertFalse(os.path.exists(d))
        with self.assertRaises(ValueError):
            write(os.path.join(tempfile.mkdtemp(dir=TMP), "out"), fmt.tokenizer("word"), assets={"a.txt": "str"})
        with self.assertRaises(ValueError):
            write(os.path.join(tempfile.mkdtemp(dir=TMP), "out"), fmt.tokenizer("word"), assets=[("a", b"")])

    def test_refused_tokenizer_configs(self):
        cases = {
            "unknown type": (dict(fmt.tokenizer(), type="wordpiece"), {}),
            "model with a directory": (spm_tokenizer(model="sub/tokenizer.model"), {"tokenizer.model": b"x"}),
            "model dot dot": (spm_tokenizer(model=".."), {"tokenizer.model": b"x"}),
            "model backslash": (spm_tokenizer(model="a\\b"), {"tokenizer.model": b"x"}),
            "model missing": ({k: v for k, v in spm_tokenizer().items() if k != "model"}, {"tokenizer.model": b"x"}),
            "model not among the assets": (spm_tokenizer(), {}),
            "model another asset": (spm_tokenizer(model="other.model"), {"tokenizer.model": b"x"}),
            "filters on sentencepiece": (dict(spm_tokenizer(), filters=""), {"tokenizer.model": b"x"}),
            "split on sentencepiece": (dict(spm_tokenizer(), split=" "), {"tokenizer.model": b"x"}),
            "filters on bpe": (dict(fmt.bpe_tokenizer(), filters="!"), {}),
            "continuation on sentencepiece": (dict(spm_tokenizer(), continuation="@@"), {"tokenizer.model": b"x"}),
            "model on bpe": (dict(fmt.bpe_tokenizer(), model="tokenizer.model"), {"tokenizer.model": b"x"}),
            "model on word": (dict(fmt.tokenizer(), model="tokenizer.model"), {"tokenizer.model": b"x"}),
            "empty continuation": (fmt.bpe_tokenizer(continuation=""), {}),
            "continuation with a space": (fmt.bpe_tokenizer(continuation="@ @"), {}),
            "lowercase not a boolean": (dict(fmt.bpe_tokenizer(), lowercase="yes"), {}),
            "pad id out of range": (fmt.bpe_tokenizer(pad_id=len(VOCAB)), {}),
            "unk not a string": (fmt.bpe_tokenizer(unk_token=3), {}),
        }
        for what, (tok, assets) in cases.items():
            with self.subTest(what):
                d = os.path.join(tempfile.mkdtemp(dir=TMP), "out")
                with self.assertRaises(ValueError):
                    write(d, tok, assets=assets)
                self.assertFalse(os.path.exists(d))

    def test_check_config_versions(self):
        cfg = {"format": "lstmlm", "format_version": 4, "vocab_size": 5, "embedding_dim": 2,
               "layers": [fmt.layer(1)], "output": {"tied": False}, "tokenizer": fmt.bpe_tokenizer(), "source": {}}
        fmt.check_config(cfg)
        for version in (1, 2, 3):
            with self.subTest(version=version):
                with self.assertRaises(ValueError) as cm:
                    fmt.check_config(dict(cfg, format_version=version))
                self.assertIn("needs format_version 4", str(cm.exception))
        with self.assertRaises(ValueError):
            fmt.check_config(dict(cfg, format_version=fmt.LATEST_FORMAT_VERSION + 1))
        fmt.check_config(dict(cfg, format_version=1, tokenizer=fmt.tokenizer("word")))


class AtomicWriteTest(unittest.TestCase):
    """A failure while the files are written or moved leaves outdir as it was: absent, or its previous files."""

    def leftovers(self, parent):
        return [n for n in os.listdir(parent) if ".tmp-" in n or ".old-" in n]

    def test_failure_while_writing_leaves_no_directory(self):
        parent = tempfile.mkdtemp(dir=TMP)
        d = os.path.join(parent, "out")

        def boom(done, total, n):
            if n == 2:
                raise RuntimeError("disk full")
        with self.assertRaises(RuntimeError):
            write(d, spm_tokenizer(), assets={"tokenizer.model": b"new"}, progress=boom)
        self.assertEqual(os.listdir(parent), [])

    def test_failure_while_writing_keeps_the_previous_model(self):
        parent = tempfile.mkdtemp(dir=TMP)
        d = os.path.join(parent, "out")
        write(d, fmt.tokenizer("word"), assets={"tokenizer.model": b"old"})
        with open(os.path.join(d, "README"), "wb") as f:
            f.write(b"mine")
        before = snapshot(d)

        def boom(done, total, n):
            if n == 3:
                raise RuntimeError("disk full")
        with self.assertRaises(RuntimeError):
            write(d, spm_tokenizer(), assets={"tokenizer.model": b"new"}, progress=boom)
        self.assertEqual(snapshot(d), before)
        self.assertEqual(self.leftovers(parent), [])

    def test_failure_while_moving_restores_every_file(self):
        parent = tempfile.mkdtemp(dir=TMP)
        d = os.path.join(parent, "out")
        write(d, fmt.tokenizer("word"), assets={"tokenizer.model": b"old"})
        before = snapshot(d)
        real = os.replace
        for fail_at in range(1, 5):  # tokenizer.model, extra.bin, vocab.json, weights.safetensors (config last)
            with self.subTest(fail_at=fail_at):
                calls = []

                def flaky(src, dst, *a, **k):
                    if ".tmp-" in str(src):
                        calls.append(dst)
                        if len(calls) == fail_at:
                            raise OSError(28, "No space left on device")
                    return real(src, dst, *a, **k)
                with mock.patch("os.replace", flaky):
                    with self.assertRaises(OSError):
                        write(d, spm_tokenizer(), assets={"tokenizer.model": b"new", "extra.bin": b"e"})
                self.assertEqual(snapshot(d), before)
                self.assertEqual(self.leftovers(parent), [])
        write(d, spm_tokenizer(), assets={"tokenizer.model": b"new"})
        after = snapshot(d)
        self.assertEqual(after["tokenizer.model"], b"new")
        self.assertEqual(json.loads(after["config.json"])["tokenizer"]["type"], "sentencepiece")


class LoadTest(unittest.TestCase):
    def test_the_cli_loads_a_sentencepiece_model(self):
        pyutil.require_cli()
        if not os.path.exists(SPM_MODEL):
            self.skipTest(f"{SPM_MODEL} not present")
        try:
            import sentencepiece
        except ImportError:
            self.skipTest("python3-sentencepiece is not installed")
        with open(SPM_MODEL, "rb") as f:
            data = f.read()
        sp = sentencepiece.SentencePieceProcessor(model_proto=data)
        pieces = [sp.IdToPiece(i) for i in range(sp.GetPieceSize())]
        d = os.path.join(tempfile.mkdtemp(dir=TMP), "spm")
        tok = fmt.sentencepiece_tokenizer(unk_token=pieces[sp.unk_id()], bos_token=pieces[sp.bos_id()],
                                          eos_token=pieces[sp.eos_id()])
        write(d, tok, assets={"tokenizer.model": data}, vocab=pieces)
        r = pyutil.run_lstmlm("info", "-m", d)
        if r.returncode != 0 and ("newer than this build reads" in r.stderr or "sentencepiece" in r.stderr):
            self.skipTest(f"this lstmlm does not read SentencePiece models yet: {r.stderr.strip()}")
        self.assertEqual(r.returncode, 0, r.stderr)


if __name__ == "__main__":
    unittest.main()
