"""SentencePiece normalizer tables (precompiled_charsmap) against libsentencepiece, which reads them without a
bounds check: a crafted table kills spm_encode (Debian's, the library's own tool) with SIGSEGV, and lstmlm
refuses the model at load in one line instead of dying on its first text. Models trained here with each of
the library's normalization rules, and with rules of their own, still load and give spm_encode's pieces.
The edits of tables (and their refusals one by one) are in tests/sentencepiece_charsmap_test.cpp.
"""
import io
import os
import shutil
import struct
import subprocess
import unittest

import pyutil
from fidelity.test_tokenizer_subword import random_tensors, score_jsonl
from lstmlm.format import layer, write_model


def varint(n):
    out = b""
    while n >= 0x80:
        out += bytes([n & 0x7F | 0x80])
        n >>= 7
    return out + bytes([n])


def read_varint(b, i):
    n = shift = 0
    while True:
        n |= (b[i] & 0x7F) << shift
        shift += 7
        i += 1
        if b[i - 1] < 0x80:
            return n, i


def fields(b):
    """(number, wire type, value) of a message whose fields are varints or length-delimited."""
    i, out = 0, []
    while i < len(b):
        tag, i = read_varint(b, i)
        if tag & 7 == 0:
            v, i = read_varint(b, i)
        else:
            n, i = read_varint(b, i)
            v, i = b[i:i + n], i + n
        out.append((tag >> 3, tag & 7, v))
    return out


def write(fs):
    return b"".join(varint(f << 3 | w) + (varint(v) if w == 0 else varint(len(v)) + v) for f, w, v in fs)


def with_root_offset(proto, offset):
    """The model with its normalizer trie's root sending every lookup `offset` units away."""
    def edit(table):
        root = (offset >> 8) << 10 | 1 << 9  # darts-clone's encoding of a large offset
        return table[:4] + struct.pack("<I", root) + table[8:]
    return write([(f, w, write([(g, ww, edit(vv) if g == 2 else vv) for g, ww, vv in fields(v)]) if f == 3 else v)
                  for f, w, v in fields(proto)])


class SentencePieceCharsmapTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        pyutil.require_cli()
        if not shutil.which("spm_encode"):
            raise unittest.SkipTest("spm_encode not installed (Debian package sentencepiece)")
        cls.tmp = pyutil.temp_root("lstmlm_spm_charsmap_")
        with open(pyutil.data("spm-google-test-model-botchan", "test_model.model"), "rb") as f:
            cls.proto = f.read()

    def model_dir(self, name, proto):
        import sentencepiece
        sp = sentencepiece.SentencePieceProcessor(model_proto=self.proto if name == "crafted" else proto)
        vocab = [sp.id_to_piece(i) for i in range(sp.get_piece_size())]
        out = os.path.join(self.tmp, name)
        write_model(out, vocab=vocab, embedding_dim=8, layers=[layer(12)], tied=False,
                    tokenizer={"type": "sentencepiece", "model": "tokenizer.model", "unk_token": "<unk>"},
                    tensors=random_tensors(len(vocab)), source={"framework": "test"},
                    assets={"tokenizer.model": proto})
        return out

    def test_a_table_that_crashes_spm_encode_is_refused_at_load(self):
        crafted = with_root_offset(self.proto, 0x3FFFFF00)
        path = os.path.join(self.tmp, "crafted.model")
        with open(path, "wb") as f:
            f.write(crafted)
        r = subprocess.run(["spm_encode", "--model", path], input=b"hello world\n", capture_output=True)
        self.assertLess(r.returncode, 0, "spm_encode survived the crafted table: the test no longer crafts a crash")
        model = self.model_dir("crafted", crafted)
        text = os.path.join(self.tmp, "hello.txt")
        with open(text, "w", encoding="utf-8") as f:
            f.write("hello world\n")
        for args in (["info", "-m", model], ["score", "-m", model, text]):
            r = pyutil.run_lstmlm(*args)
            self.assertEqual(r.returncode, 1, f"{args[0]}: {r.returncode} {r.stderr}")
            self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
            self.assertIn("tokenizer.model: normalizer_spec.precompiled_charsmap: node 0 leads to units "
                          "1073741568..1073741823, past the trie's 44288", r.stderr)

    def test_models_of_every_normalization_load_and_segment_as_spm_encode(self):
        import sentencepiece
        lines = ["Hello World, ＨＥＬＬＯ ｗｏｒｌｄ!", "ﬁne ﬂour  at   3½ °C", "Ça va? Ａ①Ⅻ ｶﾀｶﾅ",
                 "tab\there and ‘quotes’"]
        text = os.path.join(self.tmp, "lines.txt")
        with open(text, "w", encoding="utf-8") as f:
            f.write("".join(x + "\n" for x in lines))
        rules = os.path.join(self.tmp, "rules.tsv")
        with open(rules, "w", encoding="utf-8") as f:
            f.write("41\t61\nFF28\t68\nFF28 FF25\t68 65\nFB01\t66 69\n")
        corpus = lines * 40 + ["the quick brown fox jumps over the lazy dog"] * 40
        for name, opts in [("nmt_nfkc", {}), ("nfkc", {}), ("nmt_nfkc_cf", {}), ("nfkc_cf", {}), ("identity", {}),
                           ("rules", {"normalization_rule_tsv": rules})]:
            with self.subTest(normalization=name):
                if not opts:
                    opts = {"normalization_rule_name": name}
                buf = io.BytesIO()
                sentencepiece.SentencePieceTrainer.train(sentence_iterator=iter(corpus), model_writer=buf,
                                                         vocab_size=200, hard_vocab_limit=False,
                                                         character_coverage=1.0, minloglevel=2, **opts)
                model = self.model_dir(name, buf.getvalue())
                spm = os.path.join(model, "tokenizer.model")
                pieces = subprocess.run(["spm_encode", "--model", spm, "--output_format=piece", "--input", text],
                                        capture_output=True, text=True, check=True).stdout.split("\n")
                got = score_jsonl(model, text, "--no-eos")
                self.assertEqual([[w["token"] for w in g["words"]] for g in got],
                                 [p.split(" ") for p in pieces[:len(lines)]])


if __name__ == "__main__":
    unittest.main()
