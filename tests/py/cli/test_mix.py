"""`lstmlm score --mix MODEL.arpa:W`: the per-token linear mixture of the -m model and ARPA models, against a
float64 reference written here from the rule of docs/mixing.md (the ARPA back-off computed by a Python
reading of the file, the neural model's probabilities from its own `score` records); and the mixture's
distribution summing to 1 over the union of the vocabularies."""
import itertools
import json
import math
import os
import subprocess
import sys
import unittest

import numpy as np

import pyutil

MODEL = os.path.join(pyutil.SOURCE_DIR, "models", "fairytales-word")
FAIRY = os.path.join(pyutil.DATA, "torch-wlm-fairytales")
MAKE_ARPA = os.path.join(pyutil.SOURCE_DIR, "bench", "ngram", "make_arpa.py")


class Arpa:
    """A back-off ARPA model read in Python: p(w | h) from the longest n-gram present plus the back-offs."""

    def __init__(self, path):
        self.prob, self.bo, self.order = {}, {}, 0
        n = 0
        with open(path, encoding="utf-8") as f:
            for line in f:
                line = line.strip()
                if line.startswith("\\") and line.endswith("-grams:"):
                    n = int(line[1:line.index("-")])
                    self.order = max(self.order, n)
                    continue
                if not line or line.startswith("\\") or line.startswith("ngram ") or n == 0:
                    continue
                f_ = line.split()
                g = tuple(f_[1:1 + n])
                self.prob[g] = float(f_[0])
                if len(f_) == n + 2:
                    self.bo[g] = float(f_[n + 1])
        self.words = {g[0] for g in self.prob if len(g) == 1}

    def log10p(self, h, w):
        h = tuple(h)[-(self.order - 1):] if self.order > 1 else ()
        while True:
            if h + (w,) in self.prob:
                return self.prob[h + (w,)]
            if not h:
                return self.prob[("<unk>",)]
            back = self.bo.get(h, 0.0)
            h = h[1:]
            return back + self.log10p(h, w)


def cli(*args, input=""):
    return subprocess.run([pyutil.require_cli(), *args], capture_output=True, text=True, input=input)


def score_records(args, text, model=MODEL):
    r = cli("score", "-m", model, "--output-format", "jsonl", *args, input=text)
    if r.returncode != 0:
        raise AssertionError(r.stderr)
    return [json.loads(line) for line in r.stdout.splitlines() if json.loads(line)["type"] == "line"]


@unittest.skipUnless(os.path.isdir(FAIRY), "no ../shared/data/torch-wlm-fairytales")
def neural_member(tmp):
    """A random word model whose vocabulary is fairytales-word's without every ninth word, plus 30 words of
    its own (so each model lacks words the other has), lowercasing as fairytales-word does; written once
    under `tmp`."""
    path = os.path.join(tmp, "neural2")
    if os.path.exists(os.path.join(path, "weights.safetensors")):
        return path
    import lstmlm.format as lf
    with open(os.path.join(MODEL, "vocab.json"), encoding="utf-8") as f:
        vocab = json.load(f)
    words = [w for i, w in enumerate(vocab) if i < 2 or i % 9 != 3] + [f"zz{i}" for i in range(30)]
    V, E, H = len(words), 32, 48
    rng = np.random.default_rng(5)
    t = {lf.names.embedding: rng.normal(0, 0.5, (V, E)).astype(np.float32),
         lf.names.weight_ih(0): rng.normal(0, 0.3, (4 * H, E)).astype(np.float32),
         lf.names.weight_hh(0): rng.normal(0, 0.3, (4 * H, H)).astype(np.float32),
         lf.names.bias_ih(0): np.zeros(4 * H, np.float32), lf.names.bias_hh(0): np.zeros(4 * H, np.float32),
         lf.names.decoder_weight: rng.normal(0, 0.5, (V, H)).astype(np.float32),
         lf.names.decoder_bias: np.zeros(V, np.float32)}
    lf.write_model(path, vocab=words, embedding_dim=E, layers=[lf.layer(H)], tied=False,
                   tokenizer=lf.tokenizer(lowercase=True, unk_token="<unk>", eos_token="<eos>"), tensors=t,
                   source={"framework": "random", "exporter": "tests/py/cli/test_mix.py"})
    return path


class MixTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = pyutil.temp_root("lstmlm_mix_")
        # The model lowercases: the n-gram model is counted on lowercased text, so its words are words it sees.
        lower = os.path.join(cls.tmp, "train.txt")
        with open(os.path.join(FAIRY, "train.txt"), encoding="utf-8") as f, open(lower, "w", encoding="utf-8") as o:
            o.write(f.read().lower())
        cls.arpa = os.path.join(cls.tmp, "fairy3.arpa")
        subprocess.run([sys.executable, MAKE_ARPA, "-o", "3", cls.arpa, lower], check=True, capture_output=True)
        cls.lm = Arpa(cls.arpa)
        with open(os.path.join(MODEL, "vocab.json"), encoding="utf-8") as f:
            vocab = json.load(f)
        cls.neural = {"</s>" if t == "<eos>" else t for t in vocab if t != "<unk>"}
        cls.ngram = cls.lm.words - {"<unk>", "<s>"}
        union = cls.neural | cls.ngram
        cls.share0 = 1 / (len(union - cls.neural) + 1)
        cls.share1 = 1 / (len(union - cls.ngram) + 1)
        cls.union = union
        with open(os.path.join(FAIRY, "test.txt"), encoding="utf-8") as f:
            cls.text = "".join(f.readlines()[:60])

    def test_each_token_is_the_float64_mixture(self):
        lam = 0.3
        alone = score_records([], self.text)
        mixed = score_records(["--mix", f"{self.arpa}:{lam}"], self.text)
        self.assertEqual(len(alone), len(mixed))
        checked = 0
        for a, m in zip(alone, mixed):
            h = ["<s>"]
            total = 0.0
            for wa, wm in zip(a["words"], m["words"], strict=True):
                if wa["id"] < 0:
                    continue
                word = "</s>" if wa["token"] == "<eos>" else wa["token"]
                p0 = math.exp(wa["logprob"]) * (self.share0 if wa["oov"] else 1.0)
                known = word in self.ngram
                p1 = 10 ** self.lm.log10p(h, word if known else "<unk>") * (1.0 if known else self.share1)
                want = math.log((1 - lam) * p0 + lam * p1)
                self.assertAlmostEqual(wm["logprob"], want, delta=1e-6 * max(1.0, abs(want)), msg=word)
                total += wm["logprob"]
                h.append(word if known else "<unk>")
                checked += 1
            self.assertAlmostEqual(m["logprob"], total, delta=1e-5)
        self.assertGreater(checked, 1000)

    def token_probabilities(self):
        """Per scored token, (p of the neural model with its unk share, p of the ARPA model with its share)."""
        rows = []
        for a in score_records([], self.text):
            h = ["<s>"]
            for w in a["words"]:
                if w["id"] < 0:
                    continue
                word = "</s>" if w["token"] == "<eos>" else w["token"]
                known = word in self.ngram
                p1 = 10 ** self.lm.log10p(h, word if known else "<unk>") * (1.0 if known else self.share1)
                rows.append((math.exp(w["logprob"]) * (self.share0 if w["oov"] else 1.0), p1))
                h.append(word if known else "<unk>")
        return np.array(rows, dtype=np.float64)

    def test_mix_tune_gives_the_numpy_em_weights(self):
        p = self.token_probabilities()
        w = np.full(2, 0.5)
        for _ in range(1000):  # SRILM's compute-best-mix: the mean posterior of each model
            post = w * p / (p @ w)[:, None]
            nw = post.mean(axis=0)
            done = np.max(np.abs(nw - w)) <= 1e-7
            w = nw
            if done:
                break
        ppl = math.exp(-np.mean(np.log(p @ w)))
        path = os.path.join(self.tmp, "dev.txt")
        with open(path, "w", encoding="utf-8") as f:
            f.write(self.text)
        r = cli("mix-tune", "-m", MODEL, "-m", self.arpa, "--dev", path, "--output-format", "jsonl")
        self.assertEqual(r.returncode, 0, r.stderr)
        recs = [json.loads(line) for line in r.stdout.splitlines()]
        result = recs[-1]
        self.assertEqual(result["type"], "result")
        self.assertEqual(result["models"], [MODEL, self.arpa])
        self.assertEqual(result["tokens"], len(p))
        for got, want in zip(result["weights"], w, strict=True):
            self.assertAlmostEqual(got, want, delta=1e-6)
        self.assertAlmostEqual(result["perplexity"], ppl, delta=1e-6 * ppl)
        alone = {rec["model"]: rec["perplexity"] for rec in recs if rec["type"] == "model"}
        for j, m in enumerate((MODEL, self.arpa)):
            want = math.exp(-np.mean(np.log(p[:, j])))
            self.assertAlmostEqual(alone[m], want, delta=1e-6 * want)
        iterations = [rec for rec in recs if rec["type"] == "iteration"]
        self.assertEqual(iterations[0]["weights"], [0.5, 0.5])
        self.assertTrue(all(b["perplexity"] <= a["perplexity"] + 1e-9 for a, b in zip(iterations, iterations[1:])))
        self.assertLess(result["perplexity"], min(alone.values()))
        # The weights found are what score --mix takes: the same perplexity over the same tokens.
        mixed = cli("score", "-m", MODEL, "--mix", f"{self.arpa}:{result['weights'][1]!r}", "-v", "summary",
                    "--output-format", "jsonl", path)
        self.assertEqual(mixed.returncode, 0, mixed.stderr)
        self.assertAlmostEqual(json.loads(mixed.stdout)["perplexity"], result["perplexity"], delta=1e-5 * ppl)

    def test_mix_tune_weighs_a_neural_model_beside_an_arpa_one(self):
        """mix-tune -m A -m NEURAL -m ARPA: the numpy EM's weights on the three models' per-token probabilities,
        each with its unk share over the union of the three vocabularies (A's and NEURAL's from their own
        score records, the ARPA model's from the Python reading of its file)."""
        other = self.neural_member()
        with open(os.path.join(other, "vocab.json"), encoding="utf-8") as f:
            b_words = {"</s>" if t == "<eos>" else t for t in json.load(f) if t != "<unk>"}
        union = self.neural | b_words | self.ngram
        shares = [1 / (len(union - words) + 1) for words in (self.neural, b_words, self.ngram)]
        text = self.text[: len(self.text) // 2]
        rows = []
        b_lines = score_records([], text, model=other)
        for a, b in zip(score_records([], text), b_lines, strict=True):
            h = ["<s>"]
            for w, wb in zip(a["words"], b["words"], strict=True):
                if w["id"] < 0:
                    continue
                word = "</s>" if w["token"] == "<eos>" else w["token"]
                known = word in self.ngram
                p2 = 10 ** self.lm.log10p(h, word if known else "<unk>") * (1.0 if known else shares[2])
                p1 = math.exp(wb["logprob"]) * (1.0 if word in b_words else shares[1])
                rows.append((math.exp(w["logprob"]) * (shares[0] if w["oov"] else 1.0), p1, p2))
                h.append(word if known else "<unk>")
        p = np.array(rows, dtype=np.float64)
        w = np.full(3, 1 / 3)
        for _ in range(1000):
            nw = (w * p / (p @ w)[:, None]).mean(axis=0)
            done = np.max(np.abs(nw - w)) <= 1e-7
            w = nw
            if done:
                break
        path = os.path.join(self.tmp, "dev3.txt")
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        r = cli("mix-tune", "-m", MODEL, "-m", other, "-m", self.arpa, "--dev", path, "--output-format", "jsonl")
        self.assertEqual(r.returncode, 0, r.stderr)
        recs = [json.loads(line) for line in r.stdout.splitlines()]
        result = recs[-1]
        self.assertEqual(result["tokens"], len(p))
        for got, want in zip(result["weights"], w, strict=True):
            self.assertAlmostEqual(got, want, delta=1e-6)
        # The random model ends with almost no weight; its column is checked where it counts in full: alone,
        # and in the first iteration's equal mixture.
        alone = [rec["perplexity"] for rec in recs if rec["type"] == "model"]
        for j, got in enumerate(alone):
            want = math.exp(-np.mean(np.log(p[:, j])))
            self.assertAlmostEqual(got, want, delta=1e-6 * want)
        want = math.exp(-np.mean(np.log(p.mean(axis=1))))
        self.assertAlmostEqual(recs[0]["perplexity"], want, delta=1e-6 * want)

    def test_rescore_mixes_as_score_does_and_subtracts_with_a_negative_weight(self):
        lines = [line for line in self.text.splitlines() if line.strip()][:12]
        nbest = os.path.join(self.tmp, "nbest.txt")
        with open(nbest, "w", encoding="utf-8") as f:
            for i, line in enumerate(lines):
                f.write(f"utt{i // 3}-{i % 3 + 1} {line}\n")

        def rescored(spec):
            r = cli("rescore", "-m", MODEL, "--mix", spec, "--output-format", "jsonl", nbest)
            self.assertEqual(r.returncode, 0, r.stderr)
            return [json.loads(x) for x in r.stdout.splitlines() if json.loads(x)["type"] == "hyp"]

        mixed = score_records(["--mix", f"{self.arpa}:0.4"], "\n".join(lines) + "\n")
        for hyp, line in zip(rescored(f"{self.arpa}:0.4"), mixed, strict=True):
            self.assertAlmostEqual(hyp["lm_logprob"], line["logprob"], delta=1e-6)
        # LODR: ln p of the LSTM plus mu times the n-gram model's own ln p of the same words (<unk>'s for a word
        # it lacks): no mixture over the union, so no unk shares.
        mu = -0.3
        for hyp, line in zip(rescored(f"{self.arpa}:{mu}"), score_records([], "\n".join(lines) + "\n"), strict=True):
            h, ngram = ["<s>"], 0.0
            for w in line["words"]:
                if w["id"] < 0:
                    continue
                word = "</s>" if w["token"] == "<eos>" else w["token"]
                known = word in self.ngram
                ngram += self.lm.log10p(h, word if known else "<unk>") * math.log(10)
                h.append(word if known else "<unk>")
            self.assertAlmostEqual(hyp["lm_logprob"], line["logprob"] + mu * ngram, delta=1e-5)
        r = cli("score", "-m", MODEL, "--mix", f"{self.arpa}:-0.3", input="a\n")
        self.assertEqual(r.returncode, 2)
        self.assertIn("(0, 1]", r.stderr)

    def test_the_server_mixes_score_and_rescore_as_the_cli(self):
        from server.test_server import Server
        lines = [line for line in self.text.splitlines() if line.strip()][:8]
        text = "\n".join(lines) + "\n"
        cli_lines = score_records(["--mix", f"{self.arpa}:0.4"], text)
        alone = score_records([], text)
        srv = Server("--mix", f"{self.arpa}:0.4")
        try:
            status, body, _ = srv.post("/v1/score", {"text": text})
            self.assertEqual(status, 200, body)
            got = json.loads(body)["lines"]
            self.assertEqual([r["logprob"] for r in got], [r["logprob"] for r in cli_lines])
            status, body, _ = srv.post("/v1/score", {"text": text, "mix": False})
            self.assertEqual([r["logprob"] for r in json.loads(body)["lines"]], [r["logprob"] for r in alone])
            hyps = [{"utt": f"u{i // 2}", "hyp": line} for i, line in enumerate(lines)]
            status, body, _ = srv.post("/v1/rescore", {"hyps": hyps})
            self.assertEqual(status, 200, body)
            recs = json.loads(body)["hyps"]
            for r, line in zip(recs, cli_lines, strict=True):
                self.assertAlmostEqual(r["lm_logprob"], line["logprob"], delta=1e-6)
            status, body, _ = srv.post("/v1/score", {"text": text, "mix": "yes"})
            self.assertEqual(status, 400, body)
        finally:
            self.assertEqual(srv.stop(), 0)
        plain = Server()
        try:
            status, body, _ = plain.post("/v1/score", {"text": "a\n", "mix": True})
            self.assertEqual(status, 400)
            self.assertIn("--mix", body)
        finally:
            self.assertEqual(plain.stop(), 0)
        # A mixture the server cannot take is refused at start, exit status 2, one line.
        r = cli("serve", "-m", MODEL, "--port", "0", "--mix", f"{self.arpa}:1.5")
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("--mix", r.stderr)

    def test_the_mixture_sums_to_one_over_the_union(self):
        context = "once upon a"
        words = sorted(self.union - {"</s>"})
        lines = [f"{context} {w}" for w in words] + ["once upon a qqqzzzxx"]  # the out-of-union class, once
        recs = score_records(["--mix", f"{self.arpa}:0.4", "--no-eos"], "\n".join(lines) + "\n")
        p = sum(math.exp(r["words"][-1]["logprob"]) for r in recs)
        eos = score_records(["--mix", f"{self.arpa}:0.4"], context + "\n")[0]["words"][-1]
        self.assertEqual(eos["token"], "<eos>")
        p += math.exp(eos["logprob"])
        self.assertAlmostEqual(p, 1.0, delta=1e-5)

    def test_bad_weights_are_refused_naming_the_option(self):
        for spec, why in ((f"{self.arpa}:1.5", "(0, 1]"), (f"{self.arpa}:-0.2", "(0, 1]"), (f"{self.arpa}:x", "not a number"),
                          (self.arpa, "MODEL:WEIGHT"),
                          (f"{os.path.join(MODEL, 'vocab.json')}:0.5", "neither an ARPA n-gram model nor a model directory")):
            r = cli("score", "-m", MODEL, "--mix", spec, input="a\n")
            self.assertEqual(r.returncode, 2, (spec, r.stderr))
            self.assertIn("--mix", r.stderr)
            self.assertIn(why, r.stderr)
            self.assertEqual(r.stdout, "")
        r = cli("score", "-m", MODEL, "--mix", f"{self.arpa}:0.6", "--mix", f"{self.arpa}:0.6", input="a\n")
        self.assertEqual(r.returncode, 2)
        self.assertIn("sum to 1.2", r.stderr)

    def test_predict_ranks_the_mixture_score_gives(self):
        """predict --mix: each candidate word's ln p is the one score --mix gives that word after the
        context (score's per-word rule), <unk> takes what the others leave, and the whole row sums to 1; with
        an ARPA model and with a neural one (whose rows predict computes on engines of its own, score on a
        scorer of its own)."""
        for mix, context in itertools.product((["--mix", f"{self.arpa}:0.35"], ["--mix", f"{self.neural_member()}:0.35"]),
                                              ("once upon a", "the king said to the", "and she")):
            r = cli("predict", "-m", MODEL, *mix, "--top", "0", "--output-format", "jsonl", context)
            self.assertEqual(r.returncode, 0, r.stderr)
            top = json.loads(r.stdout)["top"]
            self.assertAlmostEqual(sum(c["prob"] for c in top), 1.0, delta=1e-5)
            words = [c for c in top if c["token"] not in ("<unk>", "<eos>")][:40:3]
            recs = score_records([*mix, "--no-eos"], "".join(f"{context} {c['token']}\n" for c in words))
            for c, rec in zip(words, recs, strict=True):
                last = rec["words"][-1]
                self.assertEqual(last["token"], c["token"])
                self.assertAlmostEqual(c["logprob"], last["logprob"], delta=2e-6 * max(1, abs(last["logprob"])))
            eos = [c for c in top if c["token"] == "<eos>"][0]
            want = score_records(mix, context + "\n")[0]["words"][-1]["logprob"]
            self.assertAlmostEqual(eos["logprob"], want, delta=2e-6 * max(1, abs(want)))
            plain = json.loads(cli("predict", "-m", MODEL, "--top", "0", "--output-format", "jsonl",
                                   context).stdout)["top"]
            self.assertNotEqual([c["id"] for c in plain][:10], [c["id"] for c in top][:10])

    def test_generate_samples_the_mixture_predict_ranks(self):
        """generate --mix: each token's ln p is predict --mix's for it after the prompt and the tokens before
        it; with --temperature 0 each is predict --mix's first candidate; with an ARPA model and a neural one."""
        for mix, extra in itertools.product((["--mix", f"{self.arpa}:0.35"], ["--mix", f"{self.neural_member()}:0.35"]),
                                            (["--temperature", "0"], ["--seed", "7"])):
            r = cli("generate", "-m", MODEL, *mix, "--max-tokens", "6", "--no-stop-at-eos", "--output-format",
                    "jsonl", "-p", "the king", *extra)
            self.assertEqual(r.returncode, 0, r.stderr)
            sample = json.loads(r.stdout.splitlines()[0])
            context = "the king"
            for t in sample["tokens"]:
                p = cli("predict", "-m", MODEL, *mix, "--top", "0", "--output-format", "jsonl", context)
                top = json.loads(p.stdout)["top"]
                got = [c for c in top if c["id"] == t["id"]][0]
                self.assertAlmostEqual(t["logprob"], got["logprob"], delta=2e-6 * max(1, abs(got["logprob"])))
                if extra[0] == "--temperature":
                    self.assertEqual(t["id"], top[0]["id"])
                context += " " + t["token"]
            if extra[0] == "--temperature":  # a beam of one is the greedy sample, on the mixture too
                r = cli("generate", "-m", MODEL, *mix, "--max-tokens", "6", "--no-stop-at-eos", "--output-format",
                        "jsonl", "-p", "the king", "--beam-size", "1")
                self.assertEqual(r.returncode, 0, r.stderr)
                hyp = json.loads(r.stdout.splitlines()[0])
                self.assertEqual(hyp["ids"], [t["id"] for t in sample["tokens"]])
                self.assertEqual([t["logprob"] for t in hyp["tokens"]], [t["logprob"] for t in sample["tokens"]])

    def test_the_server_mixes_predict_and_generate_as_the_cli(self):
        from server.test_server import Server
        mix = ["--mix", f"{self.arpa}:0.35"]
        want = json.loads(cli("predict", "-m", MODEL, *mix, "--top", "5", "--output-format", "jsonl",
                              "once upon a").stdout)
        plain = json.loads(cli("predict", "-m", MODEL, "--top", "5", "--output-format", "jsonl",
                               "once upon a").stdout)
        gen = json.loads(cli("generate", "-m", MODEL, *mix, "--max-tokens", "5", "--seed", "3", "--output-format",
                             "jsonl", "-p", "the king").stdout.splitlines()[0])
        srv = Server(*mix)
        try:
            status, body, _ = srv.post("/v1/predict", {"context": "once upon a", "top": 5})
            self.assertEqual(status, 200, body)
            self.assertEqual([(c["id"], c["logprob"]) for c in json.loads(body)["top"]],
                             [(c["id"], c["logprob"]) for c in want["top"]])
            status, body, _ = srv.post("/v1/predict", {"context": "once upon a", "top": 5, "mix": False})
            self.assertEqual([c["logprob"] for c in json.loads(body)["top"]], [c["logprob"] for c in plain["top"]])
            status, body, _ = srv.post("/v1/generate", {"prompt": "the king", "max_tokens": 5, "seed": 3})
            self.assertEqual(status, 200, body)
            got = json.loads(body)
            got = got["samples"][0] if "samples" in got else got
            self.assertEqual([t["logprob"] for t in got["tokens"]], [t["logprob"] for t in gen["tokens"]])
        finally:
            self.assertEqual(srv.stop(), 0)

    def test_loglinear_is_the_float64_renormalized_product(self):
        """--mix-mode loglinear: the row is (1 - w) ln p_0 + w ln p_1 renormalized over the model's ids, with
        p_1 as the linear mixture takes it (unk shares) and p_1 of <unk> what its words leave; computed here in
        float64 from the model's own row (`predict --top 0`) and a Python reading of the ARPA file. score's
        word and eos records are that row's entries."""
        lam = 0.3
        mix = ["--mix", f"{self.arpa}:{lam}", "--mix-mode", "loglinear"]
        with open(os.path.join(MODEL, "vocab.json"), encoding="utf-8") as f:
            vocab = json.load(f)
        for context in ("once upon a", "the king said to the"):
            plain = json.loads(cli("predict", "-m", MODEL, "--top", "0", "--output-format", "jsonl", context).stdout)
            r0 = {c["id"]: c["logprob"] for c in plain["top"]}
            h = ["<s>"] + [w if w in self.ngram else "<unk>" for w in context.split()]
            p1 = {}
            for j, tok in enumerate(vocab):
                if tok == "<unk>":
                    continue
                word = "</s>" if tok == "<eos>" else tok
                known = word in self.ngram
                p1[j] = 10 ** self.lm.log10p(h, word if known else "<unk>") * (1.0 if known else self.share1)
            unk = vocab.index("<unk>")
            p1[unk] = max(1 - sum(p1.values()), 0.0)
            q = {j: (1 - lam) * r0[j] + lam * math.log(p1[j]) for j in r0}
            top = max(q.values())
            lz = top + math.log(sum(math.exp(v - top) for v in q.values()))
            want = {j: v - lz for j, v in q.items()}
            r = cli("predict", "-m", MODEL, *mix, "--top", "0", "--output-format", "jsonl", context)
            self.assertEqual(r.returncode, 0, r.stderr)
            got = {c["id"]: c["logprob"] for c in json.loads(r.stdout)["top"]}
            self.assertEqual(got.keys(), want.keys())
            for j in want:
                self.assertAlmostEqual(got[j], want[j], delta=2e-5 * max(1, abs(want[j])), msg=vocab[j])
            words = sorted(want, key=want.get, reverse=True)[:12]
            words = [vocab[j] for j in words if vocab[j] not in ("<unk>", "<eos>")]
            recs = score_records([*mix, "--no-eos"], "".join(f"{context} {w}\n" for w in words))
            for w, rec in zip(words, recs, strict=True):
                self.assertAlmostEqual(rec["words"][-1]["logprob"], got[vocab.index(w)], delta=2e-6 * max(1, abs(got[vocab.index(w)])))
        for args in (["score", "--context", "document"], ["rescore", "--context", "conversation"]):
            r = cli(args[0], "-m", MODEL, *mix, *args[1:], input="a\n")
            self.assertEqual(r.returncode, 2, (args, r.stderr))
            self.assertIn("--mix-mode loglinear", r.stderr)

    def test_predict_and_generate_refuse_what_they_cannot_mix(self):
        r = cli("predict", "-m", MODEL, "--mix", f"{self.arpa}:-0.2", "once")
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("--mix", r.stderr)
        char = os.path.join(pyutil.SOURCE_DIR, "models", "charrnn-space")
        r = cli("generate", "-m", char, "--mix", f"{self.arpa}:0.2", "-p", "a")
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("needs a word model", r.stderr)
        self.assertEqual(r.stderr.count("\n"), 1, r.stderr)

    def test_fidelity_compares_the_mixture_on_both_sides(self):
        """fidelity --mix: both sides' rows are the mixture's. fp32 against fp32 is then KL 0 and, on lines
        whose words the model has, its perplexity is score --mix's (the rows in float, score's mixture in
        double: to 1e-6 relative; an OOV word is the row's <unk>, the class of every word the model lacks, as
        in predict --mix, where score gives it its own share); against int8 the reference side is unchanged."""
        lines = self.text.splitlines(keepends=True)
        text = "".join(l for l, rec in zip(lines, score_records([], self.text), strict=True)
                       if not any(w["oov"] for w in rec["words"]))
        self.assertGreater(text.count("\n"), 5)
        mix = ["--mix", f"{self.arpa}:0.4"]

        def fidelity(*args):
            r = cli("fidelity", "-m", MODEL, "--output-format", "jsonl", *args, input=text)
            self.assertEqual(r.returncode, 0, r.stderr)
            return json.loads(r.stdout)

        # Document mode too: one stream, so a row's history passes the 64 ids the rows are given.
        for ctx in (["--context", "sentence"], ["--context", "document"]):
            recs = score_records([*mix, *ctx], text)
            lp = [w["logprob"] for rec in recs for w in rec["words"] if w["id"] >= 0]
            want = math.exp(-sum(lp) / len(lp))
            same = fidelity("--precision", "fp32", *mix, *ctx)
            self.assertEqual(same["tokens"], len(lp))
            self.assertEqual(same["mean_kl"], 0)
            self.assertAlmostEqual(same["perplexity_ref"], want, delta=1e-6 * want, msg=ctx)
        same = fidelity("--precision", "fp32", *mix)
        plain = fidelity("--precision", "int8")
        low = fidelity("--precision", "int8", *mix)
        self.assertEqual(low["perplexity_ref"], same["perplexity_ref"])
        self.assertNotAlmostEqual(low["perplexity_ref"], plain["perplexity_ref"], delta=1e-3)
        self.assertGreater(low["mean_kl"], 0)
        # The n-gram part is the same on both sides: the mixture can only bring the two closer in KL.
        self.assertLess(low["mean_kl"], plain["mean_kl"])
        char = os.path.join(pyutil.SOURCE_DIR, "models", "charrnn-space")
        r = subprocess.run([pyutil.require_cli(), "fidelity", "-m", char, "--precision", "int8", *mix],
                           capture_output=True, text=True, input="a b\n")
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("needs a word model", r.stderr)

    def neural_member(self):
        return neural_member(self.tmp)

    def test_a_neural_model_mixes_per_token_as_the_float64_rule(self):
        """score --mix DIR:W with a neural word model: each word's ln p is ln((1 - W) p_A + W p_B), p_B that
        model's own score of the same word (its unk's for a word it lacks, times its share of the unk mass over
        the union of the two vocabularies), from its own `score` records of the same text; in sentence and
        document mode, and in rescore as in score."""
        other = self.neural_member()
        with open(os.path.join(other, "vocab.json"), encoding="utf-8") as f:
            b_words = {"</s>" if t == "<eos>" else t for t in json.load(f) if t != "<unk>"}
        union = self.neural | b_words
        share0, share1 = 1 / (len(union - self.neural) + 1), 1 / (len(union - b_words) + 1)
        text = self.text[: len(self.text) // 2]
        lam = 0.3
        for context in ("sentence", "document"):
            ctx = ["--context", context]
            alone = score_records(ctx, text)
            r = cli("score", "-m", other, "--output-format", "jsonl", *ctx, input=text)
            self.assertEqual(r.returncode, 0, r.stderr)
            b = [json.loads(x) for x in r.stdout.splitlines() if json.loads(x)["type"] == "line"]
            mixed = score_records([*ctx, "--mix", f"{other}:{lam}"], text)
            checked = 0
            for a, rb, m in zip(alone, b, mixed, strict=True):
                for wa, wb, wm in zip(a["words"], rb["words"], m["words"], strict=True):
                    if wa["id"] < 0:
                        continue
                    self.assertEqual(wa["token"], wb["token"])
                    word = "</s>" if wa["token"] == "<eos>" else wa["token"]
                    p0 = math.exp(wa["logprob"]) * (share0 if wa["oov"] else 1.0)
                    p1 = math.exp(wb["logprob"]) * (1.0 if word in b_words else share1)
                    want = math.log((1 - lam) * p0 + lam * p1)
                    self.assertAlmostEqual(wm["logprob"], want, delta=1e-6 * max(1.0, abs(want)), msg=(context, word))
                    checked += 1
            self.assertGreater(checked, 500)
            self.assertTrue(any(w["oov"] for a in alone for w in a["words"]))
            self.assertTrue(any(w["token"] != "<eos>" and w["token"] not in b_words for a in alone for w in a["words"]))
        # rescore mixes each hypothesis as score mixes the line.
        lines = [line for line in text.splitlines() if line.strip()][:9]
        nbest = os.path.join(self.tmp, "nbest-neural.txt")
        with open(nbest, "w", encoding="utf-8") as f:
            f.writelines(f"utt{i // 3}-{i % 3 + 1} {line}\n" for i, line in enumerate(lines))
        r = cli("rescore", "-m", MODEL, "--mix", f"{other}:{lam}", "--output-format", "jsonl", nbest)
        self.assertEqual(r.returncode, 0, r.stderr)
        hyps = [json.loads(x) for x in r.stdout.splitlines() if json.loads(x)["type"] == "hyp"]
        for hyp, line in zip(hyps, score_records(["--mix", f"{other}:{lam}"], "\n".join(lines) + "\n"), strict=True):
            self.assertAlmostEqual(hyp["lm_logprob"], line["logprob"], delta=1e-6)
        # The server mixes it into score as the CLI does; predict, which mixes rows, says why it cannot.
        from server.test_server import Server
        srv = Server("--mix", f"{other}:{lam}")
        try:
            status, body, _ = srv.post("/v1/score", {"text": "\n".join(lines) + "\n"})
            self.assertEqual(status, 200, body)
            want = score_records(["--mix", f"{other}:{lam}"], "\n".join(lines) + "\n")
            self.assertEqual([x["logprob"] for x in json.loads(body)["lines"]], [x["logprob"] for x in want])
            want = json.loads(cli("predict", "-m", MODEL, "--mix", f"{other}:{lam}", "--top", "5",
                                  "--output-format", "jsonl", "once upon").stdout)
            status, body, _ = srv.post("/v1/predict", {"context": "once upon", "top": 5})
            self.assertEqual(status, 200, body)
            self.assertEqual([(c["id"], c["logprob"]) for c in json.loads(body)["top"]],
                             [(c["id"], c["logprob"]) for c in want["top"]])
            gen = json.loads(cli("generate", "-m", MODEL, "--mix", f"{other}:{lam}", "--max-tokens", "5", "--seed",
                                 "3", "--output-format", "jsonl", "-p", "the king").stdout.splitlines()[0])
            status, body, _ = srv.post("/v1/generate", {"prompt": "the king", "max_tokens": 5, "seed": 3})
            self.assertEqual(status, 200, body)
            got = json.loads(body)
            got = got["samples"][0] if "samples" in got else got
            self.assertEqual([t["logprob"] for t in got["tokens"]], [t["logprob"] for t in gen["tokens"]])
        finally:
            self.assertEqual(srv.stop(), 0)

    def test_a_neural_model_mixes_each_row_as_the_float64_rule(self):
        """predict --mix DIR:W, linear and log-linear: each row is the float64 rule computed here from the two
        models' own rows (`predict --top 0` of each): linear (1 - W) p_A + W p_B, p_B of a word B lacks its
        unk's times its share, A's <unk> what the others leave; log-linear (1 - W) ln p_A + W ln p_B
        renormalized, p_B of A's <unk> what B's words leave. The contexts hold words both models have."""
        other = self.neural_member()
        with open(os.path.join(MODEL, "vocab.json"), encoding="utf-8") as f:
            vocab = json.load(f)
        with open(os.path.join(other, "vocab.json"), encoding="utf-8") as f:
            b_vocab = json.load(f)
        b_id = {t: i for i, t in enumerate(b_vocab) if t != "<unk>"}
        b_words = {"</s>" if t == "<eos>" else t for t in b_id}
        share1 = 1 / (len((self.neural | b_words) - b_words) + 1)
        unk = vocab.index("<unk>")
        lam = 0.3

        def row(model, context, *mix):
            r = cli("predict", "-m", model, *mix, "--top", "0", "--output-format", "jsonl", context)
            self.assertEqual(r.returncode, 0, r.stderr)
            return {c["id"]: c["logprob"] for c in json.loads(r.stdout)["top"]}

        for context in ("there was a little", "and she", "the king"):
            self.assertTrue(all(w in self.neural and w in b_words for w in context.split()), context)
            ra, rb = row(MODEL, context), row(other, context)
            pb = {j: math.exp(rb[b_id[t]]) if t in b_id else math.exp(rb[b_vocab.index("<unk>")]) * share1
                  for j, t in enumerate(vocab) if j != unk}
            pb[unk] = max(1 - sum(pb.values()), 0.0)
            lin = {j: (1 - lam) * math.exp(ra[j]) + lam * pb[j] for j in ra if j != unk}
            lin[unk] = 1 - sum(lin.values())
            q = {j: (1 - lam) * ra[j] + lam * math.log(pb[j]) for j in ra}
            lz = math.log(sum(math.exp(v) for v in q.values()))
            for mode, want in (("linear", {j: math.log(v) for j, v in lin.items()}),
                               ("loglinear", {j: v - lz for j, v in q.items()})):
                got = row(MODEL, context, "--mix", f"{other}:{lam}", "--mix-mode", mode)
                self.assertEqual(got.keys(), want.keys())
                for j in want:
                    self.assertAlmostEqual(got[j], want[j], delta=2e-5 * max(1, abs(want[j])), msg=(mode, vocab[j]))


if __name__ == "__main__":
    unittest.main()
