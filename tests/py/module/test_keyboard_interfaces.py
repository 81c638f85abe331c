"""Keyboard prediction is the same in every interface: `lstmlm predict --prefix --boost` (the reference, as
printed), the Python module (Model.predict and the incremental Model.complete), `lstmlm serve` (/v1/predict and a
session advanced word by word, then asked per keystroke) and the C API through ctypes (lstmlm_state_complete
after lstmlm_step_batch): the same candidates with the same numbers ('%.9g'), boosted or not; and `generate
--boost` equals Model.generate(boost=)."""
import ctypes
import json
import os
import subprocess
import unittest

import pyutil
from module.test_capi_ctypes import LIB, Api, g9
from server.test_server import Server

MODEL = os.path.join(pyutil.SOURCE_DIR, "models", "fairytales-word")
CONTEXT = "once upon a time there was a"
BOOSTS = "# a user's words\nking\t2.5\na king\t1\ndaughter\t-2\n"
PREFIXES = ["", "k", "d", "th", "zzq"]
TMP = pyutil.temp_root("lstmlm_keyboard_")
BOOST_FILE = os.path.join(TMP, "boost.tsv")


def cli(*args):
    if not pyutil.CLI:
        raise unittest.SkipTest("LSTMLM_CLI not set (run through ctest)")
    r = subprocess.run([pyutil.CLI, *args], capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        raise AssertionError(f"{args}: {r.stderr}")
    return r.stdout


def cli_top(prefix, boost):
    extra = ["--boost", BOOST_FILE] if boost else []
    rec = json.loads(cli("predict", "-m", MODEL, "--top", "4", "--prefix", prefix, "--output-format", "jsonl",
                         *extra, CONTEXT))
    return [(c["token"], c["id"], c["logprob"]) for c in rec["top"]]


def setUpModule():
    with open(BOOST_FILE, "w") as f:
        f.write(BOOSTS)


class KeyboardEverywhere(unittest.TestCase):
    def test_python_module(self):
        lstmlm = pyutil.require_module()
        m = lstmlm.Model(MODEL, threads=1)
        b = m.load_boost(BOOST_FILE)
        s, t = lstmlm.State(), lstmlm.State()
        m.BeginSentenceWrite(s)
        for w in CONTEXT.split():
            m.BaseScore(s, w, t)
            s, t = t, s
        history = [m.vocab.index(w) for w in CONTEXT.split()]
        for prefix in PREFIXES:
            for boost in (None, b):
                want = cli_top(prefix, boost is not None)
                got = [(c.token, c.id, json.loads(g9(c.logprob))) for c in m.predict(CONTEXT, 4, prefix, boost)]
                self.assertEqual(got, want, (prefix, boost))
                inc = m.complete(s, prefix, 4, boost, history if boost is not None else None)
                self.assertEqual([(c.token, c.id, json.loads(g9(c.logprob))) for c in inc], want)
        text = cli("generate", "-m", MODEL, "-p", "once upon a time", "-n", "6", "--temp", "0", "--boost",
                   BOOST_FILE, "--no-stop-at-eos").rstrip("\n")
        self.assertEqual(m.generate("once upon a time", 6, temperature=0, stop_at_eos=False, boost=b), text)

    def test_server(self):
        server = Server("--boost", BOOST_FILE)
        try:
            for prefix in PREFIXES:
                for boost in (False, True):
                    status, body, _ = server.post("/v1/predict", {"context": CONTEXT, "top": 4, "prefix": prefix,
                                                                  "boost": boost})
                    self.assertEqual(status, 200, body)
                    got = [(c["token"], c["id"], c["logprob"]) for c in json.loads(body)["top"]]
                    self.assertEqual(got, cli_top(prefix, boost), (prefix, boost))
            status, body, _ = server.post("/v1/sessions", {})
            sid = json.loads(body)["id"]
            for w in CONTEXT.split():  # a keyboard commits word by word
                self.assertEqual(server.post(f"/v1/sessions/{sid}/advance", {"text": w, "top": 0})[0], 200)
            for prefix in PREFIXES:  # then asks per keystroke, feeding nothing
                status, body, _ = server.post(f"/v1/sessions/{sid}/advance", {"prefix": prefix, "top": 4})
                self.assertEqual(status, 200, body)
                got = [(c["token"], c["id"], c["logprob"]) for c in json.loads(body)["top"]]
                self.assertEqual(got, cli_top(prefix, True), prefix)
            status, body, _ = server.post("/v1/predict", {"context": CONTEXT, "prefix": 7})
            self.assertEqual(status, 400, body)
            self.assertIn("prefix", body)
        finally:
            self.assertEqual(server.stop(), 0)

    def test_server_bounds_character_completions(self):
        server = Server(model=os.path.join(pyutil.SOURCE_DIR, "models", "charrnn-space"))
        try:
            status, body, _ = server.post("/v1/predict", {"contexts": ["the "] * 17, "prefix": "ki", "top": 2})
            self.assertEqual(status, 400, body)
            self.assertIn("at most 16 contexts", body)
            status, body, _ = server.post("/v1/predict", {"contexts": ["the "] * 16, "prefix": "ki", "top": 2})
            self.assertEqual(status, 200, body)
            self.assertEqual(len(json.loads(body)["predictions"]), 16)
        finally:
            self.assertEqual(server.stop(), 0)

    def test_c_api(self):
        if not LIB:
            self.skipTest("LSTMLM_CAPI_LIB not set (ctest sets it to the built liblstmlm.so)")
        api = Api(LIB)
        c = ctypes
        api.lib.lstmlm_boost_load.argtypes = [c.c_void_p, c.c_char_p, c.POINTER(c.c_void_p)]
        api.lib.lstmlm_boost_free.argtypes = [c.c_void_p]
        api.lib.lstmlm_boost_free.restype = None
        api.lib.lstmlm_state_complete.argtypes = [c.c_void_p, c.c_void_p, c.c_char_p, c.c_size_t, c.c_void_p,
                                                  c.POINTER(c.c_int32), c.c_size_t, c.c_size_t,
                                                  c.POINTER(c.c_int32), c.POINTER(c.c_float), c.POINTER(c.c_size_t)]
        model = api.load(MODEL, threads=1)
        boost = c.c_void_p()
        api.ok("boost_load", model, BOOST_FILE.encode(), c.byref(boost))
        s = api.state(model, True)
        try:
            history = api.tokenize(model, CONTEXT)
            for token in history:
                api.step(model, [s], [token])
            hist = (c.c_int32 * len(history))(*history)
            for prefix in PREFIXES:
                for boosted in (False, True):
                    ids, lps, n = (c.c_int32 * 4)(), (c.c_float * 4)(), c.c_size_t()
                    p = prefix.encode()
                    api.ok("state_complete", model, s, p, len(p), boost if boosted else None, hist,
                           len(history), 4, ids, lps, c.byref(n))
                    want = cli_top(prefix, boosted)
                    self.assertEqual([(ids[i], json.loads(g9(lps[i]))) for i in range(n.value)],
                                     [(w[1], w[2]) for w in want], (prefix, boosted))
        finally:
            api.free(s)
            api.lib.lstmlm_boost_free(boost)
            api.lib.lstmlm_model_free(model)


if __name__ == "__main__":
    unittest.main()
