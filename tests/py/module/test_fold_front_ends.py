"""The `fold_embedding` option of the request vocabulary in every front end: layer 0's input term as a table
per token (`always`) or the embedding through W_ih at every step (`never`). The two layouts round differently,
so each front end is checked to give the CLI's numbers for the layout asked for, and not the other layout's:
on models/fairytales-word the default (`auto`) folds (its table is 886 KB, under the rule's 4 MiB), so
`always` is the default's bytes and `never` differs from them in some digit while staying within 1e-5 of
them (both are checked against a float64 reference in tests/engine_reference_test.cpp)."""
import ctypes
import json
import math
import os
import subprocess
import sys
import unittest

from pyutil import SOURCE_DIR, require_cli

PYTHONPATH = os.environ.get("LSTMLM_PYTHONPATH", "")
try:
    if PYTHONPATH:
        sys.path.insert(0, PYTHONPATH)
    import lstmlm
    lstmlm.Model
except ImportError as e:
    lstmlm = None
    REASON = f"the lstmlm module is not importable ({e}; LSTMLM_PYTHONPATH={PYTHONPATH!r})"

LIB = os.environ.get("LSTMLM_CAPI_LIB", "")
MODEL = os.path.join(SOURCE_DIR, "models", "fairytales-word")
LINES = ["the old man went to the mountains .", "once upon a time there lived a king and a queen .",
         "the little girl was very happy and she ran to her mother ."]
TEXT = "\n".join(LINES) + "\n"


def cli(*args, stdin=""):
    r = subprocess.run([require_cli(), *args], input=stdin, capture_output=True, text=True)
    if r.returncode != 0:
        raise AssertionError(f"{args}: {r.stderr}")
    return r.stdout


def score(fold):
    return cli("score", "-m", MODEL, "-v", "word", "--output-format", "jsonl", "--fold-embedding", fold, stdin=TEXT)


def token_logprobs(out):
    return [w["logprob"] for r in map(json.loads, out.splitlines()) if r.get("type") == "line" for w in r["words"]]


class Cli(unittest.TestCase):
    def test_the_layouts_differ_in_their_rounding_only(self):
        auto, always, never = score("auto"), score("always"), score("never")
        self.assertEqual(always, auto)
        self.assertNotEqual(never, auto)
        a, n = token_logprobs(auto), token_logprobs(never)
        self.assertEqual(len(a), len(n))
        self.assertLess(max(abs(x - y) for x, y in zip(a, n)), 1e-5)
        r = subprocess.run([require_cli(), "score", "-m", MODEL, "--fold-embedding", "sometimes"], input="",
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 2)
        self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
        self.assertIn("--fold-embedding", r.stderr)


@unittest.skipIf(lstmlm is None, "no module" if lstmlm is not None else REASON)
class PythonKeyword(unittest.TestCase):
    def test_full_scores_are_the_clis_for_the_layout_asked(self):
        for fold in ("never", "always"):
            m = lstmlm.Model(MODEL, fold_embedding=fold)
            self.assertEqual(m.fold_embedding, fold)
            got = [s.log10prob * math.log(10) for line in LINES for s in m.full_scores(line)]
            want, other = token_logprobs(score(fold)), token_logprobs(score("always" if fold == "never" else "never"))
            self.assertEqual(len(got), len(want))
            # The CLI prints 9 significant digits; the layouts differ by more somewhere.
            self.assertLess(max(abs(g - w) / max(1.0, abs(w)) for g, w in zip(got, want)), 1e-8)
            self.assertGreater(max(abs(g - o) for g, o in zip(got, other)), 1e-7)
        self.assertEqual(lstmlm.Model(MODEL).fold_embedding, "auto")
        with self.assertRaises(lstmlm.UsageError) as e:
            lstmlm.Model(MODEL, fold_embedding="sometimes")
        self.assertIn("fold_embedding", str(e.exception))


@unittest.skipUnless(LIB, "LSTMLM_CAPI_LIB not set (run through ctest)")
class CApi(unittest.TestCase):
    def setUp(self):
        c = ctypes
        self.lib = lib = c.CDLL(LIB)
        P, SZ = c.c_void_p, c.c_size_t

        class Options(c.Structure):
            _fields_ = [("struct_size", SZ), ("threads", c.c_int32), ("precision", c.c_int32),
                        ("fold_embedding", c.c_int32)]
        self.Options = Options
        lib.lstmlm_model_load.argtypes = [c.c_char_p, c.POINTER(Options), c.POINTER(P)]
        lib.lstmlm_model_free.argtypes = [P]
        lib.lstmlm_last_error.restype = c.c_char_p
        lib.lstmlm_string_free.argtypes = [P]
        lib.lstmlm_score_jsonl_options.argtypes = [P, c.c_char_p, SZ, c.c_void_p, c.POINTER(P), c.POINTER(SZ)]

    def load(self, options):
        model = ctypes.c_void_p()
        status = self.lib.lstmlm_model_load(MODEL.encode(), ctypes.byref(options), ctypes.byref(model))
        if status != 0:
            return status, self.lib.lstmlm_last_error().decode()
        return status, model

    def scored(self, model):
        out, n = ctypes.c_void_p(), ctypes.c_size_t()
        t = TEXT.encode()
        status = self.lib.lstmlm_score_jsonl_options(model, t, len(t), None, ctypes.byref(out), ctypes.byref(n))
        self.assertEqual(status, 0, self.lib.lstmlm_last_error())
        s = ctypes.string_at(out, n.value).decode()
        self.lib.lstmlm_string_free(out)
        self.lib.lstmlm_model_free(model)
        return s

    def test_the_clis_bytes_for_each_layout(self):
        size = ctypes.sizeof(self.Options)
        for value, fold in ((1, "always"), (2, "never"), (0, "auto")):
            with self.subTest(fold=fold):
                status, model = self.load(self.Options(size, 1, 0, value))
                self.assertEqual(status, 0, model)
                self.assertEqual(self.scored(model), score(fold))
        # A caller of the first version (no fold_embedding field, even if the memory after it is not zero).
        first = self.Options(size, 1, 0, 2)
        first.struct_size = self.Options.fold_embedding.offset
        status, model = self.load(first)
        self.assertEqual(status, 0, model)
        self.assertEqual(self.scored(model), score("auto"))
        status, message = self.load(self.Options(size, 1, 0, 7))
        self.assertEqual(status, 1)  # LSTMLM_ERR_USAGE
        self.assertIn("fold_embedding is 7", message)


class ServerOption(unittest.TestCase):
    def test_score_is_the_clis_for_the_layout(self):
        from server.test_server import Server
        server = Server("--fold-embedding", "never")
        try:
            status, body, _ = server.post("/v1/score", {"text": TEXT})
            self.assertEqual(status, 200, body)
            got = json.loads(body)
            want = [json.loads(line) for line in score("never").splitlines()]
            self.assertEqual(got["lines"], want[:-1])
            self.assertNotEqual(got["lines"], [json.loads(line) for line in score("auto").splitlines()][:-1])
        finally:
            self.assertEqual(server.stop(), 0)


if __name__ == "__main__":
    unittest.main()
