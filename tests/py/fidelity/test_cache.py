"""`lstmlm score --context document --cache-window W --cache-lambda L --cache-theta T`: the continuous cache
pointer against a numpy float64 port of awd-lstm-lm's pointer.py formula, run over the real word-language-model
of ../shared/data/torch-wlm-fairytales by a float64 LSTM written from the format's documentation
(lstmlm_dir_ref.py): ptr(w) = sum over the last W steps j whose next word is w of softmax(theta h_j . h_i),
p = lambda ptr + (1 - lambda) p_model, at each prediction i > W (0-based, pointer.py's start_idx + idx > window)."""
import json
import os
import subprocess
import sys
import unittest

import numpy as np

import pyutil
from lstmlm_dir_ref import DirModel

NAME = "model_epochs_25_logint_75_emsize_100_nhid_100_drop_05.pt"


def pointer_reference(hs, lps, targets, window, lam, theta):
    """pointer.py's loss loop in float64: hs[i] the top layer's output the i-th prediction is made from."""
    out = []
    for i, (h, lp, t) in enumerate(zip(hs, lps, targets)):
        if i > window:
            keys, nxt = hs[i - window:i], targets[i - window:i]
            z = theta * (keys @ h)
            a = np.exp(z - z.max())
            a /= a.sum()
            ptr = a[nxt == t].sum()
            out.append(np.log(lam * ptr + (1 - lam) * np.exp(lp)))
        else:
            out.append(lp)
    return np.array(out)


class CacheTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        pyutil.require_cli()
        d = pyutil.data("torch-wlm-fairytales")
        cls.tmp = pyutil.temp_root("lstmlm_cache_")
        cls.model = os.path.join(cls.tmp, "wlm100")
        r = pyutil.convert(os.path.join(d, NAME), cls.model)
        assert r.returncode == 0, r.stderr
        with open(os.path.join(d, "test.txt"), encoding="utf-8") as f:
            cls.text = "".join(f.readlines()[:120])

    def score(self, *extra):
        r = subprocess.run([pyutil.CLI, "score", "-m", self.model, "--context", "document", "--output-format",
                            "jsonl", *extra], input=self.text, capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        words = [w for rec in map(json.loads, r.stdout.splitlines()) if rec["type"] == "line" for w in rec["words"]]
        return words, r.stderr

    def test_each_token_is_pointer_pys_formula(self):
        W, lam, theta = 150, 0.3, 0.5
        plain, _ = self.score()
        cached, err = self.score("--cache-window", str(W), "--cache-lambda", str(lam), "--cache-theta", str(theta))
        ids = np.array([w["id"] for w in plain])
        ref = DirModel(self.model)
        eos = pyutil.read_vocab(self.model).index("<eos>")
        state, hs, lps = ref.initial_state(), [], []
        for inp, t in zip(np.concatenate([[eos], ids[:-1]]), ids):  # the stream starts after <eos>
            state, y = ref.step(state, int(inp))
            hs.append(y)
            lps.append(ref.output(y)[t])
        hs, lps = np.array(hs), np.array(lps)
        want = pointer_reference(hs, lps, ids, W, lam, theta)
        got = np.array([w["logprob"] for w in cached])
        base = np.array([w["logprob"] for w in plain])
        self.assertEqual(len(got), len(want))
        self.assertGreater(len(got), 3 * W)
        # The engine's float32 LSTM against float64 over a 2,000-token document: its own drift, which the
        # cache does not widen.
        drift = np.max(np.abs(base - lps))
        self.assertLess(drift, 1e-4)
        print(f"max |engine - float64| without the cache {drift:.2e}, with it {np.max(np.abs(got - want)):.2e}",
              file=sys.stderr)
        self.assertLess(np.max(np.abs(got - want)), max(2 * drift, 1e-5))
        np.testing.assert_array_equal(got[:W + 1], base[:W + 1])  # no cache before the (W+1)-th prediction
        self.assertGreater(np.max(np.abs(got - base)), 0.1)      # and a real change after it
        ppl = np.exp(-got.mean())
        self.assertIn(f"perplexity {ppl:.4f}", err)

    def predict_row(self, context, *cache):
        r = subprocess.run([pyutil.CLI, "predict", "-m", self.model, "--top", "0", "--output-format", "jsonl", *cache,
                            context], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        return {c["id"]: c["logprob"] for c in json.loads(r.stdout)["top"]}

    def test_predict_ranks_pointer_pys_distribution(self):
        """predict --cache-window W: the whole next-word row is pointer.py's mixture over the context's own words
        (keys: the top layer's output at each step, each followed by the word fed next), computed here in
        float64 for every word of the vocabulary."""
        W, lam, theta = 12, 0.3, 0.5
        context = " ".join(self.text.split()[:40])
        cache = ["--cache-window", str(W), "--cache-lambda", str(lam), "--cache-theta", str(theta)]
        r = subprocess.run([pyutil.CLI, "score", "-m", self.model, "--no-eos", "--output-format", "jsonl"],
                           input=context + "\n", capture_output=True, text=True)
        ids = [w["id"] for w in json.loads(r.stdout.splitlines()[0])["words"]]
        ref = DirModel(self.model)
        state, hs = ref.initial_state(), []
        for inp in [pyutil.read_vocab(self.model).index("<eos>")] + ids:
            state, y = ref.step(state, int(inp))
            hs.append(y)
        keys, nxt = np.array(hs[-1 - W:-1]), np.array(ids[-W:])
        z = theta * (keys @ hs[-1])
        a = np.exp(z - z.max())
        a /= a.sum()
        lp = ref.output(hs[-1])
        ptr = np.array([a[nxt == w].sum() for w in range(len(lp))])
        want = np.log(lam * ptr + (1 - lam) * np.exp(lp))
        got = self.predict_row(context, *cache)
        plain = self.predict_row(context)
        self.assertEqual(sorted(got), list(range(len(lp))))
        err = max(abs(got[w] - want[w]) for w in got)
        self.assertLess(err, 1e-4, err)  # float32 engine against float64 over 41 steps
        self.assertGreater(max(abs(got[w] - plain[w]) for w in got), 0.1)
        self.assertAlmostEqual(sum(np.exp(v) for v in got.values()), 1.0, delta=1e-4)

    def test_generate_samples_what_predict_ranks_with_the_cache(self):
        """generate --cache-window W: each sample's cache holds the prompt and its own tokens; each token's ln p
        is predict --cache-window's for it after the prompt and the tokens before it; greedy takes its first
        candidate."""
        W = 12
        cache = ["--cache-window", str(W), "--cache-lambda", "0.4", "--cache-theta", "0.5"]
        prompt = " ".join(self.text.split()[:20])
        for extra in (["--temperature", "0"], ["--seed", "5", "--num-samples", "2"]):
            r = subprocess.run([pyutil.CLI, "generate", "-m", self.model, "-p", prompt, "--max-tokens", "5",
                                "--no-stop-at-eos", "--output-format", "jsonl", *cache, *extra],
                               capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stderr)
            for sample in map(json.loads, r.stdout.splitlines()):
                context = prompt
                for t in sample["tokens"]:
                    row = self.predict_row(context, *cache)
                    self.assertAlmostEqual(t["logprob"], row[t["id"]], delta=2e-6 * max(1, abs(row[t["id"]])))
                    if extra[0] == "--temperature":
                        self.assertEqual(row[t["id"]], max(row.values()))
                    context += " " + t["token"]

    def test_the_server_caches_sessions_predict_and_generate_as_the_cli(self):
        """A session made with cache fields scores each advanced word as score --context document
        --cache-window does (the session's stream is one document, advanced in pieces), and its candidates are
        predict --cache-window's after the same words; predict, generate and score requests take the fields."""
        from server.test_server import Server
        W = 12
        cache = {"cache_window": W, "cache_lambda": 0.3, "cache_theta": 0.5}
        flags = ["--cache-window", str(W), "--cache-lambda", "0.3", "--cache-theta", "0.5"]
        words = self.text.split()[:40]
        context = " ".join(words)
        r = subprocess.run([pyutil.CLI, "score", "-m", self.model, "--context", "document", "--no-eos",
                            "--output-format", "jsonl", *flags], input=context + "\n", capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        want = [w["logprob"] for w in json.loads(r.stdout.splitlines()[0])["words"]]
        r = subprocess.run([pyutil.CLI, "score", "-m", self.model, "--context", "document", "--no-eos",
                            "--output-format", "jsonl"], input=context + "\n", capture_output=True, text=True)
        plain = [w["logprob"] for w in json.loads(r.stdout.splitlines()[0])["words"]]
        self.assertGreater(max(abs(a - b) for a, b in zip(want, plain)), 0.01)  # the cache changes the words
        row = self.predict_row(context, *flags)
        srv = Server(model=self.model)
        try:
            status, body, _ = srv.post("/v1/sessions", cache)
            self.assertEqual(status, 200, body)
            sid = json.loads(body)["id"]
            got, top = [], None
            for piece in (words[:7], words[7:8], words[8:]):
                status, body, _ = srv.post(f"/v1/sessions/{sid}/advance", {"text": " ".join(piece), "top": 5})
                self.assertEqual(status, 200, body)
                rec = json.loads(body)
                got += [w["logprob"] for w in rec["words"]]
                top = rec["top"]
            self.assertEqual(len(got), len(want))
            for g, w in zip(got, want):
                self.assertAlmostEqual(g, w, delta=1e-6 * max(1, abs(w)))
            best = sorted(row.items(), key=lambda kv: (-kv[1], kv[0]))[:5]
            self.assertEqual([c["id"] for c in top], [k for k, _ in best])
            for c, (_, v) in zip(top, best):
                self.assertAlmostEqual(c["logprob"], v, delta=1e-6 * max(1, abs(v)))
            status, body, _ = srv.post("/v1/predict", {"context": context, "top": 0, **cache})
            self.assertEqual(status, 200, body)
            self.assertEqual({c["id"]: c["logprob"] for c in json.loads(body)["top"]}, row)
            r = subprocess.run([pyutil.CLI, "generate", "-m", self.model, "-p", context, "--max-tokens", "4", "--seed",
                                "3", "--output-format", "jsonl", *flags], capture_output=True, text=True)
            gen = json.loads(r.stdout.splitlines()[0])
            status, body, _ = srv.post("/v1/generate", {"prompt": context, "max_tokens": 4, "seed": 3, **cache})
            self.assertEqual(status, 200, body)
            sample = json.loads(body)["samples"][0]
            self.assertEqual([t["logprob"] for t in sample["tokens"]], [t["logprob"] for t in gen["tokens"]])
            status, body, _ = srv.post("/v1/score", {"text": context + "\n", "eos": False, "context": "document",
                                                     **cache})
            self.assertEqual(status, 200, body)
            self.assertEqual([w["logprob"] for w in json.loads(body)["lines"][0]["words"]], want)
            for bad, field in (({"cache_window": -1}, "cache_window"), ({"cache_window": 5, "cache_lambda": 2},
                                                                         "cache_lambda")):
                status, body, _ = srv.post("/v1/sessions", bad)
                self.assertEqual(status, 400, body)
                self.assertIn(field, body)
            status, body, _ = srv.post("/v1/score", {"text": "a\n", "cache_window": 5})
            self.assertEqual(status, 400, body)
            self.assertIn("context", body)
        finally:
            self.assertEqual(srv.stop(), 0)

    def test_python_takes_the_cache_as_the_cli(self):
        """Model.predict/generate/score_lines with cache_window=, cache_lambda=, cache_theta=: the CLI's numbers."""
        lstmlm = pyutil.require_module()
        m = lstmlm.Model(self.model)
        cache = {"cache_window": 12, "cache_lambda": 0.3, "cache_theta": 0.5}
        flags = ["--cache-window", "12", "--cache-lambda", "0.3", "--cache-theta", "0.5"]
        context = " ".join(self.text.split()[:40])
        row = self.predict_row(context, *flags)
        got = {c.id: c.logprob for c in m.predict(context, top=None, **cache)}
        self.assertEqual(got.keys(), row.keys())
        for k, v in row.items():
            self.assertAlmostEqual(got[k], v, delta=1e-6 * max(1, abs(v)))
        r = subprocess.run([pyutil.CLI, "generate", "-m", self.model, "-p", context, "--max-tokens", "6", "--seed", "4",
                            *flags], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(m.generate(context, max_tokens=6, seed=4, **cache), r.stdout.strip())
        r = subprocess.run([pyutil.CLI, "score", "-m", self.model, "--context", "document", "--output-format", "jsonl",
                            *flags], input=self.text[:3000], capture_output=True, text=True)
        want = [json.loads(x)["logprob"] for x in r.stdout.splitlines() if json.loads(x)["type"] == "line"]
        lines = self.text[:3000].splitlines()
        got = [x.logprob for x in m.score_lines(lines, context="document", **cache)]
        self.assertEqual(len(got), len(want))
        for g, w in zip(got, want):
            self.assertAlmostEqual(g, w, delta=1e-6 * max(1, abs(w)))
        for bad in ({"cache_window": -1}, {"cache_window": 5, "cache_lambda": 1.5}, {"cache_window": 5, "cache_theta": -1}):
            with self.assertRaises(lstmlm.UsageError):
                m.predict(context, **bad)
        with self.assertRaises(lstmlm.UsageError):  # a beam search does not take the cache: said, not ignored
            m.generate(context, max_tokens=3, beam_size=2, **cache)
        with self.assertRaises(lstmlm.UsageError):
            m.score_lines(lines, **cache)  # sentence mode

    def test_the_c_api_generates_with_the_cache_as_the_cli(self):
        """lstmlm_generate_jsonl with cache_window/cache_lambda/cache_theta: the CLI's bytes; a caller of the
        struct's first version gets no cache; a lambda out of range is a usage error naming the field."""
        import ctypes as c
        lib_path = os.environ.get("LSTMLM_CAPI_LIB", "")
        if not lib_path:
            self.skipTest("LSTMLM_CAPI_LIB not set (run through ctest)")
        lib = c.CDLL(lib_path)
        P, SZ = c.c_void_p, c.c_size_t

        class Generate(c.Structure):
            _fields_ = [("struct_size", SZ), ("max_tokens", c.c_int32), ("num_samples", c.c_int32),
                        ("temperature", c.c_float), ("top_k", c.c_int32), ("top_p", c.c_float), ("seed", c.c_uint64),
                        ("cache_window", c.c_int32), ("cache_lambda", c.c_double), ("cache_theta", c.c_double)]
        lib.lstmlm_model_load.argtypes = [c.c_char_p, P, c.POINTER(P)]
        lib.lstmlm_model_free.argtypes = [P]
        lib.lstmlm_last_error.restype = c.c_char_p
        lib.lstmlm_string_free.argtypes = [P]
        lib.lstmlm_generate_jsonl.argtypes = [P, c.c_char_p, SZ, c.POINTER(Generate), c.POINTER(P), c.POINTER(SZ)]
        model = P()
        self.assertEqual(lib.lstmlm_model_load(self.model.encode(), None, c.byref(model)), 0)
        prompt = " ".join(self.text.split()[:30])

        def generate(o):
            out, n = P(), SZ()
            status = lib.lstmlm_generate_jsonl(model, prompt.encode(), len(prompt.encode()), c.byref(o), c.byref(out),
                                               c.byref(n))
            if status != 0:
                return status, lib.lstmlm_last_error().decode()
            text = c.string_at(out, n.value).decode()
            lib.lstmlm_string_free(out)
            return status, text

        def cli(*flags):
            r = subprocess.run([pyutil.CLI, "generate", "-m", self.model, "-p", prompt, "--max-tokens", "6", "--seed",
                                "4", "--num-samples", "2", "--output-format", "jsonl", *flags],
                               capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stderr)
            return r.stdout
        try:
            size = c.sizeof(Generate)
            with_cache = cli("--cache-window", "12", "--cache-lambda", "0.3", "--cache-theta", "0.5")
            self.assertNotEqual(with_cache, cli())  # the cache changes these samples
            self.assertEqual(generate(Generate(size, 6, 2, 1.0, 0, 1.0, 4, 12, 0.3, 0.5)), (0, with_cache))
            first = Generate(size, 6, 2, 1.0, 0, 1.0, 4, 12, 0.3, 0.5)
            first.struct_size = Generate.cache_window.offset  # the first version: its cache fields unread
            self.assertEqual(generate(first), (0, cli()))
            status, message = generate(Generate(size, 6, 2, 1.0, 0, 1.0, 4, 12, 1.5, 0.5))
            self.assertEqual(status, 1)  # LSTMLM_ERR_USAGE
            self.assertIn("cache_lambda", message)
        finally:
            lib.lstmlm_model_free(model)

    def test_the_cache_needs_a_document_and_sane_values(self):
        document = ["--context", "document"]
        for args, key in ((["--cache-window", "10"], "--context"),
                          (document + ["--cache-window", "-1"], "--cache-window"),
                          (document + ["--cache-window", "10", "--cache-lambda", "1.5"], "--cache-lambda"),
                          (document + ["--cache-window", "10", "--cache-theta", "nan"], "--cache-theta"),
                          (document + ["--cache-window", "10", "--entropy"], "--entropy")):
            r = subprocess.run([pyutil.CLI, "score", "-m", self.model, *args], input="a b\n", capture_output=True,
                               text=True)
            self.assertEqual(r.returncode, 2, (args, r.stderr))
            self.assertIn(key, r.stderr)
            self.assertEqual(len(r.stderr.splitlines()), 1, r.stderr)
            self.assertEqual(r.stdout, "")
        for cmd, args, key in (("predict", ["--window", "4", "--cache-window", "5", "a b"], "--cache-window"),
                               ("predict", ["--cache-window", "5", "--cache-lambda", "-1", "a b"], "--cache-lambda"),
                               ("generate", ["--beam-size", "2", "--cache-window", "5", "-p", "a"], "--beam-size"),
                               ("generate", ["--cache-window", "5", "--cache-theta", "1e9", "-p", "a"], "--cache-theta")):
            r = subprocess.run([pyutil.CLI, cmd, "-m", self.model, *args], capture_output=True, text=True)
            self.assertEqual(r.returncode, 2, (args, r.stderr))
            self.assertIn(key, r.stderr)
            self.assertEqual(len(r.stderr.splitlines()), 1, r.stderr)
            self.assertEqual(r.stdout, "")

if __name__ == "__main__":
    unittest.main()
