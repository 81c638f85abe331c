"""The `softmax` option of the request vocabulary in the other front ends: the Python module's keyword, the C API's
_softmax functions (through ctypes) and the server's field each give the CLI's `--softmax skip` numbers, which
tests/py/cli/test_softmax_skip.py checks against a float64 numpy evaluation; a bad word is one error naming the
option."""
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
LINES = ["the old man went to the mountains .", "", "once upon a time there lived a zyzzyva king ."]
TEXT = "\n".join(LINES) + "\n"


def cli(*args, stdin=""):
    r = subprocess.run([require_cli(), *args], input=stdin, capture_output=True, text=True)
    if r.returncode != 0:
        raise AssertionError(f"{args}: {r.stderr}")
    return r.stdout


def records(out):
    return [json.loads(line) for line in out.splitlines() if line.strip()]


@unittest.skipIf(lstmlm is None, "no module" if lstmlm is not None else REASON)
class PythonKeyword(unittest.TestCase):
    def test_score_lines_and_predict(self):
        m = lstmlm.Model(MODEL)
        want = [r for r in records(cli("score", "-m", MODEL, "--softmax", "skip", "--output-format", "jsonl",
                                       "-v", "sentence", stdin=TEXT)) if r["type"] == "line"]
        got = m.score_lines(LINES, softmax="skip")
        self.assertEqual(len(got), len(want))
        for g, w in zip(got, want):
            self.assertAlmostEqual(g.logprob, w["logprob"], delta=1e-5 * max(1, abs(w["logprob"])))
        full = m.score_lines(LINES)
        self.assertGreater(abs(full[0].logprob - got[0].logprob), 1.0)  # logits, not log-probs
        top = m.predict("the old", top=5, softmax="skip")
        want = records(cli("predict", "-m", MODEL, "--top", "5", "--softmax", "skip", "--output-format", "jsonl",
                           "the old"))[0]["top"]
        self.assertEqual([c.id for c in top], [c["id"] for c in want])
        for c, w in zip(top, want):
            self.assertTrue(math.isnan(c.prob))
            self.assertAlmostEqual(c.logprob, w["logit"], delta=1e-5 * max(1, abs(w["logit"])))
        with self.assertRaises(lstmlm.UsageError) as e:
            m.score_lines(LINES, softmax="sometimes")
        self.assertIn("softmax", str(e.exception))


@unittest.skipUnless(LIB, "LSTMLM_CAPI_LIB not set (run through ctest)")
class CApi(unittest.TestCase):
    def setUp(self):
        c = ctypes
        self.lib = lib = c.CDLL(LIB)
        P, SZ = c.c_void_p, c.c_size_t

        class Options(c.Structure):
            _fields_ = [("struct_size", SZ), ("threads", c.c_int32), ("precision", c.c_int32)]
        lib.lstmlm_model_load.argtypes = [c.c_char_p, c.POINTER(Options), c.POINTER(P)]
        lib.lstmlm_model_free.argtypes = [P]
        lib.lstmlm_last_error.restype = c.c_char_p
        lib.lstmlm_string_free.argtypes = [P]
        class ScoreOptions(c.Structure):
            _fields_ = [("struct_size", SZ), ("softmax", c.c_char_p), ("reverse", c.c_int32)]
        self.ScoreOptions = ScoreOptions
        lib.lstmlm_score_jsonl_options.argtypes = [P, c.c_char_p, SZ, c.POINTER(ScoreOptions), c.POINTER(P),
                                                   c.POINTER(SZ)]
        lib.lstmlm_predict_jsonl_softmax.argtypes = [P, c.c_char_p, SZ, c.c_int32, c.c_char_p, c.POINTER(P),
                                                     c.POINTER(SZ)]
        self.model = P()
        self.assertEqual(lib.lstmlm_model_load(MODEL.encode(), c.byref(Options(c.sizeof(Options), 1, 0)),
                                               c.byref(self.model)), 0)

    def tearDown(self):
        self.lib.lstmlm_model_free(self.model)

    def text(self, fn, *args):
        out, n = ctypes.c_void_p(), ctypes.c_size_t()
        status = fn(self.model, *args, ctypes.byref(out), ctypes.byref(n))
        if status != 0:
            return status, self.lib.lstmlm_last_error().decode()
        s = ctypes.string_at(out, n.value).decode()
        self.lib.lstmlm_string_free(out)
        return status, s

    def test_the_cli_bytes(self):
        t = TEXT.encode()
        for word, reverse in ((b"skip", 0), (b"full", 0), (None, 0), (None, 1), (b"skip", 1)):
            with self.subTest(softmax=word, reverse=reverse):
                o = self.ScoreOptions(ctypes.sizeof(self.ScoreOptions), word, reverse)
                status, got = self.text(self.lib.lstmlm_score_jsonl_options, t, len(t), ctypes.byref(o))
                self.assertEqual(status, 0, got)
                args = (["--softmax", word.decode()] if word else []) + (["--reverse"] if reverse else [])
                self.assertEqual(got, cli("score", "-m", MODEL, "-v", "word", "--output-format", "jsonl", *args,
                                          stdin=TEXT))
        ctx = b"the old man"
        status, got = self.text(self.lib.lstmlm_predict_jsonl_softmax, ctx, len(ctx), 7, b"skip")
        self.assertEqual(status, 0, got)
        self.assertEqual(got, cli("predict", "-m", MODEL, "--top", "7", "--softmax", "skip", "--output-format",
                                  "jsonl", "the old man"))
        o = self.ScoreOptions(ctypes.sizeof(self.ScoreOptions), b"sometimes", 0)
        status, message = self.text(self.lib.lstmlm_score_jsonl_options, t, len(t), ctypes.byref(o))
        self.assertEqual(status, 1)  # LSTMLM_ERR_USAGE
        self.assertIn("softmax", message)


class ServerField(unittest.TestCase):
    def test_score_and_predict(self):
        from server.test_server import Server
        server = Server()
        try:
            status, body, _ = server.post("/v1/score", {"text": TEXT, "softmax": "skip"})
            self.assertEqual(status, 200, body)
            got = json.loads(body)
            want = records(cli("score", "-m", MODEL, "-v", "word", "--output-format", "jsonl", "--softmax", "skip",
                               stdin=TEXT))
            self.assertEqual(got["lines"], want[:-1])
            self.assertEqual(got["summary"], want[-1])
            status, body, _ = server.post("/v1/predict", {"context": "the old", "top": 4, "softmax": "skip"})
            self.assertEqual(status, 200, body)
            want = records(cli("predict", "-m", MODEL, "--top", "4", "--softmax", "skip", "--output-format",
                               "jsonl", "the old"))[0]
            self.assertEqual(json.loads(body), want)
            status, body, _ = server.post("/v1/score", {"text": TEXT, "softmax": "sometimes"})
            self.assertEqual(status, 400, body)
            self.assertIn("softmax", body)
            status, body, _ = server.post("/v1/score", {"text": TEXT, "softmax": "skip", "entropy": True})
            self.assertEqual(status, 400, body)
        finally:
            self.assertEqual(server.stop(), 0)


if __name__ == "__main__":
    unittest.main()
