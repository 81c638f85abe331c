"""The subword tokenizers of the engine (tokenizer.type sentencepiece and bpe, docs/model-format.md) against
their references: Debian's spm_encode / spm_decode (Google's own tools) on every line of the corpora of
../shared/data, and subword-nmt's documented way of undoing BPE (`sed -r 's/(@@ )|(@@ ?$)//g'`).

The models are random LSTMs over real vocabularies (the SentencePiece test model of Google's repository,
1000 unigram pieces trained on Botchan): the tokenizer, word aggregation and detokenization do not depend on
the weights. Lines are fed as the CLI reads them: a UTF-8 BOM at the start of a file and the CR of a CRLF
line end are no part of a line (as for every tokenizer), so spm_encode is given the same lines.
"""
import json
import os
import re
import shutil
import subprocess
import unittest

import numpy as np

import pyutil
from lstmlm.format import layer, write_model

CORPORA = [("corpora-ptb", "ptb.valid.txt"), ("corpora-ptb", "ptb.test.txt"), ("corpora-wikitext-2", "valid.txt"),
           ("corpora-wikitext-2", "test.txt"), ("corpora-french", "notre-dame-de-paris.txt"),
           ("corpora-french", "wiki-fr-extract.txt")]


def random_tensors(V, E=8, H=12, seed=0):
    rng = np.random.default_rng(seed)
    f = lambda *s: rng.normal(0, 0.3, s).astype(np.float32)  # noqa: E731
    return {"embedding.weight": f(V, E), "lstm.weight_ih_l0": f(4 * H, E), "lstm.weight_hh_l0": f(4 * H, H),
            "lstm.bias_ih_l0": f(4 * H), "lstm.bias_hh_l0": f(4 * H), "decoder.weight": f(V, H),
            "decoder.bias": f(V)}


def score_jsonl(model, path, *opts):
    r = pyutil.run_lstmlm("score", "-m", model, "-v", "word", "--output-format", "jsonl", *opts, path)
    if r.returncode != 0:
        raise AssertionError(r.stderr)
    return [json.loads(x) for x in r.stdout.splitlines() if x.startswith('{"type": "line"')]


class SentencePieceTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        pyutil.require_cli()
        if not shutil.which("spm_encode"):
            raise unittest.SkipTest("spm_encode not installed (Debian package sentencepiece)")
        cls.tmp = pyutil.temp_root("lstmlm_spm_")
        cls.spm = pyutil.data("spm-google-test-model-botchan", "test_model.model")
        import sentencepiece
        sp = sentencepiece.SentencePieceProcessor(model_file=cls.spm)
        cls.vocab = [sp.id_to_piece(i) for i in range(sp.get_piece_size())]
        cls.model = os.path.join(cls.tmp, "m")
        with open(cls.spm, "rb") as f:
            blob = f.read()
        write_model(cls.model, vocab=cls.vocab, embedding_dim=8, layers=[layer(12)], tied=False,
                    tokenizer={"type": "sentencepiece", "model": "tokenizer.model", "unk_token": "<unk>",
                               "bos_token": "<s>", "eos_token": "</s>"},
                    tensors=random_tensors(len(cls.vocab)), source={"framework": "test"},
                    assets={"tokenizer.model": blob})

    def lines_of(self, folder, name):
        """The file's lines as the CLI reads them (BOM and CR dropped), its invalid UTF-8 lines left out."""
        with open(pyutil.data(folder, name), "rb") as f:
            raw = f.read()
        if raw.startswith(b"\xef\xbb\xbf"):
            raw = raw[3:]
        out = []
        for line in raw.split(b"\n")[:-1] if raw.endswith(b"\n") else raw.split(b"\n"):
            line = line[:-1] if line.endswith(b"\r") else line
            try:
                out.append(line.decode("utf-8"))
            except UnicodeDecodeError:
                continue
        return out

    def test_pieces_and_ids_are_spm_encodes_on_every_corpus_line(self):
        for folder, name in CORPORA:
            with self.subTest(corpus=f"{folder}/{name}"):
                lines = self.lines_of(folder, name)
                text = os.path.join(self.tmp, f"{folder}-{name}")
                with open(text, "w", encoding="utf-8", newline="\n") as f:
                    f.write("".join(line + "\n" for line in lines))
                ids = subprocess.run(["spm_encode", "--model", self.spm, "--output_format=id", "--input", text],
                                     capture_output=True, text=True, check=True).stdout.split("\n")
                pieces = subprocess.run(["spm_encode", "--model", self.spm, "--output_format=piece", "--input",
                                         text], capture_output=True, text=True, check=True).stdout.split("\n")
                got = score_jsonl(self.model, text, "--no-eos")
                self.assertEqual(len(got), len(lines))
                self.assertGreater(sum(len(g["words"]) for g in got), 5000)
                for k, g in enumerate(got):
                    want_ids = [int(x) for x in ids[k].split()]
                    self.assertEqual([w["id"] for w in g["words"]], want_ids, f"line {k + 1}: {lines[k]!r}")
                    self.assertEqual([w["token"] for w in g["words"]], pieces[k].split(" ") if pieces[k] else [],
                                     f"line {k + 1}")
                    for w in g["words"]:
                        self.assertEqual(w["oov"], w["id"] == 0)  # piece 0 is the model's <unk>

    def test_words_sum_their_pieces_bit_for_bit(self):
        lines = self.lines_of("corpora-ptb", "ptb.valid.txt")[:300]
        text = os.path.join(self.tmp, "ptb300.txt")
        with open(text, "w", encoding="utf-8") as f:
            f.write("".join(line + "\n" for line in lines))
        pieces = score_jsonl(self.model, text)
        words = score_jsonl(self.model, text, "--aggregate", "words")
        for k, (p, w) in enumerate(zip(pieces, words)):
            # A word starts at a piece beginning with U+2581; the line's last word takes </s>.
            groups = []
            for rec in p["words"]:
                if rec["token"] == "</s>" and groups:
                    groups[-1].append(rec)
                elif rec["token"].startswith("\u2581") or not groups:
                    groups.append([rec])
                else:
                    groups[-1].append(rec)
            self.assertEqual([x["token"] for x in w["words"]], lines[k].split() or ["</s>"], f"line {k + 1}")
            self.assertEqual(len(groups), len(w["words"]))
            for g, rec in zip(groups, w["words"]):
                # The aggregate adds the pieces' float log-probs in double and rounds once to float.
                want = np.float32(sum(np.float64(np.float32(x["logprob"])) for x in g))
                self.assertEqual(np.float32(rec["logprob"]), want, f"line {k + 1}: {rec['token']}")
            self.assertEqual(p["logprob"], w["logprob"])

    def test_generated_text_is_spm_decodes(self):
        r = pyutil.run_lstmlm("generate", "-m", self.model, "-n", "40", "--num-samples", "8", "--seed", "5",
                              "--output-format", "jsonl")
        self.assertEqual(r.returncode, 0, r.stderr)
        samples = [json.loads(x) for x in r.stdout.splitlines() if '"type": "sample"' in x]
        self.assertEqual(len(samples), 8)
        checked = 0
        for s in samples:
            ids = [t["id"] for t in s["tokens"] if t["id"] not in (1, 2)]  # <s>, </s>: no text
            if 0 in ids:
                continue  # <unk> prints as its vocabulary string, spm_decode as " \u2047 "
            want = subprocess.run(["spm_decode", "--model", self.spm, "--input_format=id"],
                                  input=" ".join(map(str, ids)) + "\n", capture_output=True, text=True,
                                  check=True).stdout.rstrip("\n")
            self.assertEqual(s["text"], want)
            checked += 1
        self.assertGreater(checked, 3)

    def test_a_model_whose_vocabulary_is_not_its_pieces_is_refused(self):
        bad = os.path.join(self.tmp, "bad")
        shutil.copytree(self.model, bad)
        vocab = list(self.vocab)
        vocab[7], vocab[8] = vocab[8], vocab[7]
        with open(os.path.join(bad, "vocab.json"), "w", encoding="utf-8") as f:
            json.dump(vocab, f, ensure_ascii=False)
        r = pyutil.run_lstmlm("info", "-m", bad)
        self.assertEqual(r.returncode, 1)
        self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
        self.assertIn("piece 7 is not vocab.json's token 7", r.stderr)
        os.remove(os.path.join(bad, "tokenizer.model"))
        r = pyutil.run_lstmlm("info", "-m", bad)
        self.assertEqual(r.returncode, 1)
        self.assertIn("tokenizer.model", r.stderr)
        with open(os.path.join(bad, "tokenizer.model"), "wb") as f:
            f.write(b"\x00not a model")
        r = pyutil.run_lstmlm("info", "-m", bad)
        self.assertEqual(r.returncode, 1)
        self.assertIn("not a SentencePiece model", r.stderr)

    def test_a_tokenizer_model_linked_from_outside_is_refused(self):
        # The same bytes, outside the directory, reached through a symbolic link by the configured name.
        linked, outside = os.path.join(self.tmp, "linked"), os.path.join(self.tmp, "outside.model")
        shutil.copytree(self.model, linked)
        shutil.move(os.path.join(linked, "tokenizer.model"), outside)
        os.symlink(outside, os.path.join(linked, "tokenizer.model"))
        r = pyutil.run_lstmlm("info", "-m", linked)
        self.assertEqual(r.returncode, 1, r.stdout)
        self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
        self.assertIn("leads outside the model directory", r.stderr)
        # A link that stays inside the directory is read.
        inside = os.path.join(linked, "pieces.model")
        shutil.move(outside, inside)
        os.remove(os.path.join(linked, "tokenizer.model"))
        os.symlink("pieces.model", os.path.join(linked, "tokenizer.model"))
        r = pyutil.run_lstmlm("info", "-m", linked)
        self.assertEqual(r.returncode, 0, r.stderr)

    def test_normalize_ccnet_scores_the_text_cc_net_would_score(self):
        # cc_net's pipeline: normalize each line (ccnet_reference.py, from cc_net's code), then SentencePiece.
        import ccnet_reference
        lines = self.lines_of("corpora-french", "notre-dame-de-paris.txt")[:400]
        raw = os.path.join(self.tmp, "raw.txt")
        done = os.path.join(self.tmp, "normalized.txt")
        with open(raw, "w", encoding="utf-8") as f:
            f.write("".join(line + "\n" for line in lines))
        with open(done, "w", encoding="utf-8") as f:
            f.write("".join(ccnet_reference.normalize(line) + "\n" for line in lines))
        got = score_jsonl(self.model, raw, "--normalize", "ccnet")
        want = score_jsonl(self.model, done)
        self.assertEqual([(g["words"], g["logprob"]) for g in got], [(w["words"], w["logprob"]) for w in want])
        self.assertNotEqual(got, score_jsonl(self.model, raw))  # the text did change

    def test_normalize_in_the_python_module_is_the_clis(self):
        import ccnet_reference
        lstmlm = pyutil.require_module()
        lines = self.lines_of("corpora-french", "wiki-fr-extract.txt")[:300]
        m = lstmlm.Model(self.model, threads=1)
        got = [x.logprob for x in m.score_lines(lines, normalize="ccnet")]
        want = [x.logprob for x in m.score_lines([ccnet_reference.normalize(x) for x in lines])]
        self.assertEqual(got, want)
        self.assertNotEqual(got, [x.logprob for x in m.score_lines(lines)])
        with self.assertRaises(ValueError):
            m.score_lines(lines, normalize="nfd")
        # word_scores: the CLI's --aggregate words records, in log10.
        text = os.path.join(self.tmp, "one.txt")
        with open(text, "w", encoding="utf-8") as f:
            f.write(lines[3] + "\n")
        cli = score_jsonl(self.model, text, "--aggregate", "words", "--normalize", "ccnet")[0]["words"]
        py = m.word_scores(lines[3], normalize="ccnet")
        self.assertEqual([w for w, _ in py], [x["token"] for x in cli])
        self.assertEqual(["%.9g" % lp for _, lp in py], ["%.9g" % x["log10prob"] for x in cli])

    def test_invalid_utf8_is_an_error_naming_file_and_line(self):
        text = os.path.join(self.tmp, "bad.txt")
        with open(text, "wb") as f:
            f.write(b"good line\nbad \xff byte\n")
        r = pyutil.run_lstmlm("score", "-m", self.model, text)
        self.assertEqual(r.returncode, 1)
        self.assertIn(f"{text}:2: invalid UTF-8 at byte 5", r.stderr)


class ByteFallbackTest(unittest.TestCase):
    """A SentencePiece model with byte_fallback: a character it has no piece for is its UTF-8 bytes, one
    piece each; words and generated text join them back into the character, as spm_decode does."""

    def test_byte_pieces_join_into_their_character(self):
        pyutil.require_cli()
        import sentencepiece
        tmp = pyutil.temp_root("lstmlm_spm_bytes_")
        with open(pyutil.data("corpora-ptb", "ptb.valid.txt"), encoding="utf-8") as f:
            text = [x.strip() for x in f][:2000]
        proto = __import__("io").BytesIO()
        sentencepiece.SentencePieceTrainer.train(sentence_iterator=iter(text), model_writer=proto, vocab_size=400,
                                                 byte_fallback=True, model_type="unigram", num_threads=1)
        sp = sentencepiece.SentencePieceProcessor(model_proto=proto.getvalue())
        vocab = [sp.id_to_piece(i) for i in range(sp.get_piece_size())]
        model = os.path.join(tmp, "m")
        write_model(model, vocab=vocab, embedding_dim=8, layers=[layer(12)], tied=False,
                    tokenizer={"type": "sentencepiece", "model": "tokenizer.model", "unk_token": "<unk>",
                               "bos_token": "<s>", "eos_token": "</s>"},
                    tensors=random_tensors(len(vocab), seed=3), source={"framework": "test"},
                    assets={"tokenizer.model": proto.getvalue()})
        path = os.path.join(tmp, "t.txt")
        with open(path, "w", encoding="utf-8") as f:
            f.write("the \u03a9 cat \u00e9t\u00e9\n")
        pieces = score_jsonl(model, path)[0]["words"]
        self.assertIn("<0xCE>", [p["token"] for p in pieces])  # the Omega as two byte pieces
        words = score_jsonl(model, path, "--aggregate", "words")[0]["words"]
        self.assertEqual([w["token"] for w in words], ["the", "\u03a9", "cat", "\u00e9t\u00e9"])
        r = pyutil.run_lstmlm("generate", "-m", model, "-n", "60", "--num-samples", "6", "--seed", "4",
                              "--output-format", "jsonl", "--temperature", "2")
        self.assertEqual(r.returncode, 0, r.stderr)
        for s in (json.loads(x) for x in r.stdout.splitlines() if '"type": "sample"' in x):
            ids = [t["id"] for t in s["tokens"] if t["id"] not in (1, 2)]
            self.assertEqual(s["text"], sp.decode(ids))


class BpeTest(unittest.TestCase):
    """Pre-split BPE: pieces split on whitespace, words joined at "@@", text undone as subword-nmt says."""

    @classmethod
    def setUpClass(cls):
        pyutil.require_cli()
        cls.tmp = pyutil.temp_root("lstmlm_bpe_")
        cls.vocab = ["<unk>", "</s>", "the", "qu@@", "ick", "bro@@", "wn", "fox", "jump@@", "s", "over", "la@@", "zy",
                     "dog", "."]
        cls.model = os.path.join(cls.tmp, "m")
        write_model(cls.model, vocab=cls.vocab, embedding_dim=8, layers=[layer(12)], tied=False,
                    tokenizer={"type": "bpe", "unk_token": "<unk>", "eos_token": "</s>"},
                    tensors=random_tensors(len(cls.vocab), seed=1), source={"framework": "test"})

    def test_every_front_end_gives_a_subword_model_the_same_completion(self):
        # A subword model completes no half-typed word: the CLI, the server and Python refuse a prefix with the
        # library's one message, each naming the option its own way; the next piece without a prefix works.
        why = "a bpe model completes no half-typed word"
        r = pyutil.run_lstmlm("predict", "-m", self.model, "--prefix", "qu", "the")
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("--prefix: " + why, r.stderr)
        self.assertEqual(pyutil.run_lstmlm("predict", "-m", self.model, "the").returncode, 0)
        from server.test_server import Server
        server = Server(model=self.model)
        try:
            for path, body in (("/v1/predict", {"context": "the", "prefix": "qu"}),):
                status, text, _ = server.post(path, body)
                self.assertEqual(status, 400, text)
                self.assertIn("field 'prefix': " + why, json.loads(text)["error"]["message"])
            status, text, _ = server.post("/v1/sessions", {})
            self.assertEqual(status, 200, text)
            sid = json.loads(text)["id"]
            status, text, _ = server.post(f"/v1/sessions/{sid}/advance", {"text": "the", "prefix": "qu"})
            self.assertEqual(status, 400, text)
            self.assertIn("field 'prefix': " + why, json.loads(text)["error"]["message"])
            status, text, _ = server.post(f"/v1/sessions/{sid}/advance", {"text": "the"})
            self.assertEqual(status, 200, text)
        finally:
            self.assertEqual(server.stop(), 0)
        lstmlm = pyutil.require_module()
        m = lstmlm.Model(self.model, threads=1)
        self.assertEqual(m.tokenizer_type, "bpe")
        with self.assertRaisesRegex(lstmlm.UsageError, "^prefix: " + why):
            m.predict("the", prefix="qu")
        self.assertEqual(len(m.predict("the", top=3)), 3)

    def test_words_join_at_the_continuation_marker(self):
        text = os.path.join(self.tmp, "t.txt")
        line = "the qu@@ ick bro@@ wn fox jump@@ s over the la@@ zy dog ."
        with open(text, "w") as f:
            f.write(line + "\n")
        pieces = score_jsonl(self.model, text)[0]["words"]
        self.assertEqual([p["token"] for p in pieces], line.split() + ["</s>"])
        words = score_jsonl(self.model, text, "--aggregate", "words")[0]["words"]
        want = re.sub(r"(@@ )|(@@ ?$)", "", line).split()
        self.assertEqual([w["token"] for w in words], want)
        self.assertEqual(np.float32(words[1]["logprob"]),
                         np.float32(np.float64(np.float32(pieces[1]["logprob"])) + np.float32(pieces[2]["logprob"])))

    def test_generated_text_is_the_pieces_undone(self):
        r = pyutil.run_lstmlm("generate", "-m", self.model, "-n", "30", "--num-samples", "4", "--seed", "2",
                              "--output-format", "jsonl", "--no-stop-at-eos")
        self.assertEqual(r.returncode, 0, r.stderr)
        for s in (json.loads(x) for x in r.stdout.splitlines() if '"type": "sample"' in x):
            pieces = " ".join(self.vocab[t["id"]] for t in s["tokens"] if t["id"] != 1)
            self.assertEqual(s["text"], re.sub(r"(@@ )|(@@ ?$)", "", pieces))


if __name__ == "__main__":
    unittest.main()
