"""A stream (a state, its next distribution and the tokens fed) exported from any front end imports into each of
the others and continues with the same bits: the Python module (State.to_bytes / Model.state_from_bytes), the
server (GET /v1/sessions/ID/state's "bytes", POST /v1/sessions {"state": ...}) and the C API through ctypes
(lstmlm_state_serialize / lstmlm_state_deserialize). Each of the 3 x 3 pairs feeds "once" in the exporter and
"upon a" in the importer; every result is the same bytes, and equal to feeding all three words in one front end."""
import base64
import ctypes
import json
import os
import unittest

import pyutil
from module.test_capi_ctypes import LIB, Api
from server.test_server import Server

MODEL = os.path.join(pyutil.SOURCE_DIR, "models", "fairytales-word")
FIRST, THEN = ["once"], ["upon", "a"]


class PythonFace:
    def __init__(self, lstmlm):
        self.lstmlm = lstmlm
        self.m = lstmlm.Model(MODEL, threads=1)

    def begin(self, words):
        s = self.lstmlm.State()
        self.m.BeginSentenceWrite(s)
        return self.feed(s, words)

    def feed(self, s, words):
        for w in words:
            t = self.lstmlm.State()
            self.m.BaseScore(s, w, t)
            s = t
        return s

    def export(self, words):
        return self.begin(words).to_bytes()

    def continue_from(self, data, words):
        return self.feed(self.m.state_from_bytes(data), words).to_bytes()


class ServerFace:
    def __init__(self, server):
        self.server = server

    def session(self, body):
        status, text, _ = self.server.post("/v1/sessions", body)
        assert status == 200, text
        return json.loads(text)["id"]

    def feed(self, sid, words):
        status, text, _ = self.server.post(f"/v1/sessions/{sid}/advance", {"text": " ".join(words), "top": 0})
        assert status == 200, text
        status, text, _ = self.server.request("GET", f"/v1/sessions/{sid}/state")
        assert status == 200, text
        self.server.request("DELETE", f"/v1/sessions/{sid}")
        return base64.b64decode(json.loads(text)["bytes"], validate=True)

    def export(self, words):
        return self.feed(self.session({}), words)

    def continue_from(self, data, words):
        state = {"version": 2, "tokens": 0, "bytes": base64.b64encode(data).decode()}
        return self.feed(self.session({"state": state}), words)


class CFace:
    def __init__(self, api):
        self.api = api
        self.model = api.load(MODEL, threads=1)

    def feed(self, s, words):
        for w in words:
            self.api.step(self.model, [s], self.api.tokenize(self.model, w))
        data = self.api.serialize(s)
        self.api.free(s)
        return data

    def export(self, words):
        return self.feed(self.api.state(self.model, True), words)

    def continue_from(self, data, words):
        s = ctypes.c_void_p()
        self.api.ok("state_deserialize", self.model, data, len(data), ctypes.byref(s))
        return self.feed(s, words)


class StreamExchange(unittest.TestCase):
    def test_three_by_three(self):
        if not LIB:
            raise unittest.SkipTest("LSTMLM_CAPI_LIB not set (ctest sets it to the built liblstmlm.so)")
        lstmlm = pyutil.require_module()
        server = Server()
        try:
            faces = {"python": PythonFace(lstmlm), "server": ServerFace(server), "c": CFace(Api(LIB))}
            whole = {name: f.export(FIRST + THEN) for name, f in faces.items()}
            self.assertEqual(len(set(whole.values())), 1, "the front ends disagree feeding alone")
            want = whole["python"]
            for src, exporter in faces.items():
                data = exporter.export(FIRST)
                for dst, importer in faces.items():
                    with self.subTest(exported=src, imported=dst):
                        self.assertEqual(importer.continue_from(data, THEN), want)
        finally:
            self.assertEqual(server.stop(), 0)


if __name__ == "__main__":
    unittest.main()
