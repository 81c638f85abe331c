"""The Python module against the CLI: every number `import lstmlm` gives is the number `lstmlm score`,
`predict` and `generate` print for the same input (compared as the CLI's 9 significant digits), and the
module's own paths (single sentences, batches, KenLM-style states) agree with each other exactly."""
import copy
import json
import math
import os
import pickle
import shutil
import subprocess
import sys
import tempfile
import threading
import unittest

import numpy as np

import pyutil

PYTHONPATH = os.environ.get("LSTMLM_PYTHONPATH", "")
try:
    if PYTHONPATH:
        sys.path.insert(0, PYTHONPATH)
    import lstmlm
    lstmlm.Model  # the compiled part: a package without it (the source tree's) raises ImportError here
except ImportError as e:  # the sanitizer build has no module; a build without pybind11-dev neither
    lstmlm = None
    REASON = f"the lstmlm module is not importable ({e}; LSTMLM_PYTHONPATH={PYTHONPATH!r})"

WORD = os.path.join(pyutil.SOURCE_DIR, "models", "fairytales-word")
CHAR = os.path.join(pyutil.SOURCE_DIR, "models", "charrnn-space")
SENTENCES = [
    "the old man went to the mountains .",
    "the princess was very beautiful .",
    "",
    "once upon a time there lived a zyzzyva king .",  # an OOV, scored as <unk>
    "and they lived happily ever after",
]


def g9(x):
    """A float as the CLI writes it in jsonl (%.9g; non-finite as null)."""
    return None if x is None or not math.isfinite(x) else float("%.9g" % x)


def setUpModule():
    if lstmlm is None:
        print("SKIP:", REASON, file=sys.stderr)
        raise unittest.SkipTest(REASON)


def cli_jsonl(*args, stdin=None):
    import subprocess
    r = subprocess.run([pyutil.require_cli(), *args], capture_output=True, text=True, input=stdin)
    if r.returncode != 0:
        raise AssertionError(f"lstmlm {' '.join(args)}: exit {r.returncode}: {r.stderr}")
    return [json.loads(line) for line in r.stdout.splitlines() if line.strip()]


def write_lines(lines):
    f = tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False, encoding="utf-8")
    f.write("".join(s + "\n" for s in lines))
    f.close()
    return f.name


class ScoreAgainstCli(unittest.TestCase):
    def check_model(self, path, sentences, **kw):
        m = lstmlm.Model(path, threads=1, **kw)
        f = write_lines(sentences)
        try:
            recs = cli_jsonl("score", "-m", path, "--output-format", "jsonl", "-v", "word", f)
        finally:
            os.unlink(f)
        lines = [r for r in recs if r["type"] == "line"]
        self.assertEqual(len(lines), len(sentences))
        for s, rec in zip(sentences, lines):
            self.assertEqual(g9(m.score(s)), rec["log10prob"], s)
            fs = list(m.full_scores(s))
            self.assertEqual([w.token for w in fs], [w["token"] for w in rec["words"]])
            self.assertEqual([bool(w.oov) for w in fs], [w["oov"] for w in rec["words"]])
            for w, cw in zip(fs, rec["words"]):
                self.assertEqual(g9(w.log10prob) if w.length else None, cw["log10prob"])
            # One line's perplexity as the CLI's summary of a file holding that line alone.
            one = write_lines([s])
            try:
                summ = cli_jsonl("score", "-m", path, "--output-format", "jsonl", "-v", "summary", one)[-1]
            finally:
                os.unlink(one)
            self.assertEqual(g9(m.perplexity(s)), summ["perplexity"])
        # The batch path is the single path, exactly.
        batch = m.score_batch(sentences)
        self.assertIsInstance(batch, np.ndarray)
        self.assertEqual(batch.dtype, np.float64)
        self.assertEqual(batch.tolist(), [m.score(s) for s in sentences])
        return m

    def test_word_model(self):
        self.check_model(WORD, SENTENCES)

    def test_char_model(self):
        self.check_model(CHAR, ["hello world", "the quick brown fox", ""])

    def test_no_eos_and_no_bos(self):
        m = lstmlm.Model(WORD, threads=1)
        s = SENTENCES[0]
        f = write_lines([s])
        try:
            rec = cli_jsonl("score", "-m", WORD, "--output-format", "jsonl", "-v", "word", "--no-eos", f)[0]
        finally:
            os.unlink(f)
        self.assertEqual(g9(m.score(s, eos=False)), rec["log10prob"])
        self.assertEqual(len(list(m.full_scores(s, eos=False))), len(s.split()))
        # Without the start token the first word is context only (length 0), as --no-bos.
        f = write_lines([s])
        try:
            rec = cli_jsonl("score", "-m", WORD, "--output-format", "jsonl", "-v", "word", "--no-bos", f)[0]
        finally:
            os.unlink(f)
        self.assertEqual(g9(m.score(s, bos=False)), rec["log10prob"])
        self.assertEqual(rec["words"][0]["log10prob"], None)
        self.assertEqual(rec["tokens"], len(s.split()))  # the first word not scored, eos scored
        first = next(m.full_scores(s, bos=False))
        self.assertEqual((first.length, first.log10prob), (0, 0.0))
        # The n-gram lengths are the CLI's --output-format kenlm ones, with and without the start token.
        for bos, flags in ((True, []), (False, ["--no-bos"])):
            with self.subTest(bos=bos):
                r = subprocess.run([pyutil.CLI, "score", "-m", WORD, "--output-format", "kenlm", *flags],
                                   input=s + "\n", capture_output=True, text=True)
                self.assertEqual(r.returncode, 0, r.stderr)
                cli = [int(f.split(" ")[1]) for f in r.stdout.splitlines()[0].split("\t") if f.count(" ") == 2
                       and "=" in f.split(" ")[0]]
                self.assertEqual([w.length for w in m.full_scores(s, bos=bos)], cli)
        self.assertLess(m.score(s, bos=False), 0)

    def test_keras_model_with_input_length_uses_the_cli_window(self):
        d = pyutil.data("keras3-ml-wordpred")
        tmp = tempfile.mkdtemp(prefix="lstmlm_pymod_")
        self.addCleanup(shutil.rmtree, tmp, ignore_errors=True)
        out = os.path.join(tmp, "wordpred")
        pyutil.convert_ok(self, os.path.join(d, "word_prediction_model.h5"), out, "--vocab",
                          os.path.join(d, "word_index.json"))
        m = self.check_model(out, ["machine learning is a field of study", "deep learning models"])
        self.assertEqual(m.window[0], "pad_to")
        stateful = lstmlm.Model(out, threads=1, stateful=True)
        self.assertIsNone(stateful.window)
        f = write_lines(["machine learning is a field of study"])
        try:
            rec = cli_jsonl("score", "-m", out, "--output-format", "jsonl", "--stateful", f)[0]
        finally:
            os.unlink(f)
        self.assertEqual(g9(stateful.score("machine learning is a field of study")), rec["log10prob"])


class KenlmStates(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.m = lstmlm.Model(WORD, threads=1)

    def test_base_score_chain_equals_full_scores(self):
        m = self.m
        s = "the old man went to the mountains ."
        state, out = lstmlm.State(), lstmlm.State()
        m.BeginSentenceWrite(state)
        steps = []
        for w in s.split() + ["</s>"]:
            steps.append(m.BaseScore(state, w, out))
            state, out = out, state
        self.assertEqual(steps, [f.log10prob for f in m.full_scores(s)])
        self.assertAlmostEqual(sum(steps), m.score(s), places=9)

    def test_state_copy_and_pickle_continue_identically(self):
        m = self.m
        a = lstmlm.State()
        m.BeginSentenceWrite(a)
        m.BaseScore(a, "the", a)
        b, c = copy.copy(a), pickle.loads(pickle.dumps(a))
        d = copy.deepcopy(a)
        self.assertTrue(a == b == c == d)
        x, y, z = lstmlm.State(), lstmlm.State(), lstmlm.State()
        self.assertEqual(m.BaseScore(a, "old", x), m.BaseScore(c, "old", y))
        self.assertEqual(m.BaseScore(b, "old", z), m.BaseScore(d, "old", lstmlm.State()))
        self.assertTrue(x == y == z)
        self.assertFalse(x == a)
        self.assertEqual(len(a.h), 1)
        self.assertEqual(a.h[0].shape, (100,))

    def test_unwritten_or_foreign_state_is_refused(self):
        with self.assertRaisesRegex(lstmlm.UsageError, "BeginSentenceWrite"):
            self.m.BaseScore(lstmlm.State(), "the", lstmlm.State())
        other = lstmlm.Model(CHAR, threads=1)
        s = lstmlm.State()
        other.BeginSentenceWrite(s)
        with self.assertRaisesRegex(lstmlm.UsageError, "another model"):
            self.m.BaseScore(s, "the", lstmlm.State())

    def test_oov_word_is_unk(self):
        s, o = lstmlm.State(), lstmlm.State()
        self.m.BeginSentenceWrite(s)
        self.assertEqual(self.m.BaseScore(s, "zyzzyva", o), self.m.BaseScore(s, "<unk>", lstmlm.State()))


class ArraysPredictGenerate(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.m = lstmlm.Model(WORD, threads=1)

    def test_logprobs_rows_are_the_scores(self):
        m = self.m
        s = "the old man went to the mountains ."
        ids = m.encode(s, bos=True, eos=True)
        lp = m.logprobs(ids[:-1])
        self.assertEqual(lp.shape, (len(ids) - 1, m.vocab_size))
        self.assertEqual(lp.dtype, np.float32)
        got = [float(lp[t, ids[t + 1]]) / math.log(10) for t in range(len(ids) - 1)]
        want = [f.log10prob for f in m.full_scores(s)]
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)
        np.testing.assert_allclose(np.exp(lp.astype(np.float64)).sum(axis=1), 1.0, atol=1e-5)
        self.assertEqual(m.logprobs([]).shape, (0, m.vocab_size))
        with self.assertRaisesRegex(lstmlm.InputError, "not a token id"):
            m.logprobs([0, m.vocab_size])

    def test_predict_matches_cli(self):
        rec = cli_jsonl("predict", "-m", WORD, "--top", "5", "--output-format", "jsonl", "the old man")[0]
        got = self.m.predict("the old man", top=5)
        self.assertEqual([c.token for c in got], [t["token"] for t in rec["top"]])
        self.assertEqual([g9(c.prob) for c in got], [t["prob"] for t in rec["top"]])
        ids = self.m.encode("the old man", bos=True)
        self.assertEqual(self.m.predict(ids, top=5), got)
        self.assertEqual(len(self.m.predict("the", top=None)), self.m.vocab_size)

    def test_generate_matches_cli_text(self):
        import subprocess
        args = ["-p", "the old man", "-n", "20", "--seed", "42", "--top-k", "40", "--temperature", "0.8"]
        r = subprocess.run([pyutil.require_cli(), "generate", "-m", WORD, *args], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        text = self.m.generate("the old man", max_tokens=20, seed=42, top_k=40, temperature=0.8)
        self.assertEqual(text + "\n", r.stdout)
        self.assertEqual(self.m.last_seed, 42)
        recs = cli_jsonl("generate", "-m", CHAR, "-p", "once", "-n", "30", "--seed", "7", "--num-samples", "3",
                         "--output-format", "jsonl")
        char = lstmlm.Model(CHAR, threads=1)
        got = char.generate("once", max_tokens=30, seed=7, num_samples=3)
        self.assertEqual(got, ["once" + r["text"] for r in recs])
        # Sample i does not depend on how many are drawn.
        self.assertEqual(char.generate("once", max_tokens=30, seed=7), got[0])

    def test_vocab_and_tokenizer(self):
        m = self.m
        self.assertEqual(len(m.vocab), m.vocab_size)
        self.assertIn("the", m)
        self.assertNotIn("zyzzyva", m)
        self.assertEqual(m.vocab[m.vocab_index("old")], "old")
        self.assertIsNone(m.vocab_index("zyzzyva"))
        self.assertEqual(m.tokenize("The Old  man."), ["the", "old", "man."] if "man." in m else m.tokenize("the old man."))
        self.assertEqual(m.decode(m.encode("the old man")), "the old man")
        self.assertEqual((m.eos, m.unk), ("<eos>", "<unk>"))


class Errors(unittest.TestCase):
    def test_bad_model_dir(self):
        with self.assertRaises(lstmlm.ModelError) as cm:
            lstmlm.Model("/nonexistent/model")
        self.assertIsInstance(cm.exception, OSError)
        self.assertIsInstance(cm.exception, lstmlm.Error)
        self.assertIn("/nonexistent/model", str(cm.exception))
        self.assertNotIn("\n", str(cm.exception))

    def test_broken_model_file_names_the_file(self):
        tmp = tempfile.mkdtemp(prefix="lstmlm_pymod_")
        self.addCleanup(shutil.rmtree, tmp, ignore_errors=True)
        for name in ("config.json", "vocab.json"):
            with open(os.path.join(WORD, name), "rb") as src, open(os.path.join(tmp, name), "wb") as dst:
                dst.write(src.read())
        with open(os.path.join(WORD, "weights.safetensors"), "rb") as src:
            blob = src.read()
        with open(os.path.join(tmp, "weights.safetensors"), "wb") as dst:
            dst.write(blob[: len(blob) // 2])  # truncated
        with self.assertRaisesRegex(lstmlm.ModelError, "weights.safetensors"):
            lstmlm.Model(tmp)

    def test_bad_arguments(self):
        with self.assertRaisesRegex(lstmlm.UsageError, "precision"):
            lstmlm.Model(WORD, precision="fp16")
        with self.assertRaises(ValueError):
            lstmlm.Model(WORD, threads=100000)
        m = lstmlm.Model(WORD, threads=1)
        with self.assertRaisesRegex(lstmlm.UsageError, "context"):
            m.score_lines(["a"], context="paragraph")
        with self.assertRaisesRegex(lstmlm.UsageError, "exclude"):
            lstmlm.Model(WORD, pad_to=3, window=4)
        with self.assertRaisesRegex(lstmlm.UsageError, "temperature"):
            m.generate("the", temperature=-1)

    def test_invalid_utf8_is_an_input_error_naming_the_line(self):
        m = lstmlm.Model(WORD, threads=1)
        with self.assertRaisesRegex(lstmlm.InputError, r"<batch>:2: .*UTF-8"):
            m.score_batch([b"the old man", b"the \xff man"])
        with self.assertRaises(ValueError):
            m.score(b"\xc3")

    def test_oov_error_policy(self):
        m = lstmlm.Model(CHAR, threads=1)
        with self.assertRaisesRegex(lstmlm.InputError, "src:1"):
            m.score_lines(["\u4e2d"], source="src", oov="error")


class Jsonl(unittest.TestCase):
    def test_score_jsonl_is_the_cli_filter(self):
        import subprocess
        docs = [json.dumps({"id": 1, "text": "the old man went to the mountains ."}),
                '{"text": "the princess\\nwas very beautiful .", "z": 1.50}',
                "not json",
                json.dumps({"title": "no text"})]
        m = lstmlm.Model(WORD, threads=1)
        got = m.score_jsonl(docs, source="docs.jsonl")
        self.assertEqual([g[0] for g in got], ["kept", "kept", "error", "error"])
        self.assertRegex(got[2][1], r"^docs.jsonl:3: ")
        f = write_lines(docs)
        try:
            r = subprocess.run([pyutil.require_cli(), "score", "-m", WORD, "--input-format", "jsonl",
                                "--on-error", "skip", f], capture_output=True, text=True)
        finally:
            os.unlink(f)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, "".join(g[1] + "\n" for g in got if g[0] == "kept"))
        ppl = [json.loads(g[1])["perplexity"] for g in got[:2]]
        cut = (ppl[0] + ppl[1]) / 2
        kept = m.score_jsonl(docs[:2], max_perplexity=cut)
        self.assertEqual(sorted(k[0] for k in kept), ["filtered", "kept"])


class Stubs(unittest.TestCase):
    def test_the_stub_declares_what_the_module_has(self):
        import ast
        path = os.path.join(pyutil.SOURCE_DIR, "python", "lstmlm", "__init__.pyi")
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read())
        declared = {}
        for node in tree.body:
            if isinstance(node, ast.ClassDef):
                declared[node.name] = {n.name for n in node.body if isinstance(n, ast.FunctionDef)} | {
                    n.target.id for n in node.body if isinstance(n, ast.AnnAssign)}
            elif isinstance(node, ast.FunctionDef):
                declared[node.name] = set()
        self.assertEqual(set(declared), {n for n in lstmlm.__all__ if n != "__version__"})
        m = lstmlm.Model(WORD, threads=1)
        m.generate("the", max_tokens=1, seed=1)  # sets last_seed
        public = {n for n in dir(m) if not n.startswith("_")}
        self.assertEqual(declared["Model"] - {"__init__", "__contains__"}, public)
        state = {n for n in dir(lstmlm.State()) if not n.startswith("_")}
        self.assertEqual(declared["State"] - {"__init__", "__eq__", "__copy__", "__deepcopy__"}, state)


class Threads(unittest.TestCase):
    def test_first_arrays_from_two_threads_do_not_deadlock(self):
        # pybind11 makes numpy's API on first use, importing numpy without the GIL: two threads' first
        # arrays at once once deadlocked. A fresh interpreter, numpy not imported before the module.
        import subprocess
        code = """import sys, threading
sys.path.insert(0, sys.argv[1])
import lstmlm
m = lstmlm.Model(sys.argv[2], threads=1)
def work():
    for _ in range(20):
        m.score_batch(["the old man went to the mountains ."] * 64)
ts = [threading.Thread(target=work) for _ in range(2)]
[t.start() for t in ts]
[t.join() for t in ts]
print("done")
"""
        r = subprocess.run([sys.executable, "-c", code, PYTHONPATH, WORD], capture_output=True, text=True,
                           timeout=120)
        self.assertEqual((r.returncode, r.stdout), (0, "done\n"), r.stderr)

    def test_threads_sharing_one_model_get_the_sequential_numbers(self):
        m = lstmlm.Model(WORD, threads=1)
        sentences = [f"the old man went to the mountains {i} ." for i in range(40)] + SENTENCES
        want = [m.score(s) for s in sentences]
        got = [None] * 4
        errors = []

        def work(k):
            try:
                got[k] = [m.score(s) for s in sentences]
            except Exception as e:  # reported below
                errors.append(e)

        ts = [threading.Thread(target=work, args=(k,)) for k in range(4)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        self.assertEqual(errors, [])
        self.assertEqual(got, [want] * 4)
        self.assertGreaterEqual(m.max_concurrency, 1)


if __name__ == "__main__":
    unittest.main()
