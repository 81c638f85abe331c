"""`lstmlm serve` over real HTTP (http.client, 127.0.0.1, a free port; every server is stopped by the test that
started it): each endpoint's response holds the exact bytes the CLI prints for the same input, alone and under
concurrent clients; sessions equal the CLI's document scoring and prediction; bad requests get one-line JSON
errors naming the field while the server keeps serving; SIGTERM finishes and exits 0."""
import base64
import concurrent.futures
import http.client
import json
import os
import signal
import socket
import subprocess
import tempfile
import threading
import time
import unittest

import pyutil

MODEL = os.path.join(pyutil.SOURCE_DIR, "models", "fairytales-word")
SENTENCES = ["the old man went to the mountains .", "the princess was very beautiful .", "",
             "zzqx the king said", "once upon a time there was a king"]


def cli(*args, stdin=None):
    if not pyutil.CLI:
        raise unittest.SkipTest("LSTMLM_CLI not set (run through ctest)")
    r = subprocess.run([pyutil.CLI, *args], input=stdin, capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        raise AssertionError(f"{args}: {r.stderr}")
    return r.stdout


class Server:
    """lstmlm serve on 127.0.0.1 and a free port; stop() sends SIGTERM and returns the exit status."""

    def __init__(self, *extra, model=MODEL):
        if not pyutil.CLI:
            raise unittest.SkipTest("LSTMLM_CLI not set (run through ctest)")
        self.proc = subprocess.Popen([pyutil.CLI, "serve", "-m", model, "--port", "0", "--threads", "1", *extra],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self.err = []
        line = self.proc.stderr.readline()
        self.err.append(line)
        if "listening on http://127.0.0.1:" not in line:
            self.proc.kill()
            raise AssertionError(f"no address on stderr: {line!r}")
        self.port = int(line.rsplit(":", 1)[1])
        self.drain = threading.Thread(target=lambda: self.err.extend(self.proc.stderr), daemon=True)
        self.drain.start()
        deadline = time.monotonic() + 60
        while self.request("GET", "/health")[0] != 200:
            if time.monotonic() > deadline:
                raise AssertionError("the server never became ready")
            time.sleep(0.05)

    def request(self, method, path, body=None, headers=None, raw=None):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        try:
            data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
            c.request(method, path, body=data, headers=headers or {})
            r = c.getresponse()
            return r.status, r.read().decode("utf-8"), dict(r.getheaders())
        finally:
            c.close()

    def post(self, path, body, **kw):
        return self.request("POST", path, body, **kw)

    def stop(self, signal_it=True):
        if signal_it and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise
        self.drain.join(timeout=10)
        self.proc.stderr.close()
        return rc


class ServerTestBase(unittest.TestCase):
    extra = ()

    @classmethod
    def setUpClass(cls):
        cls.server = Server(*cls.extra)

    @classmethod
    def tearDownClass(cls):
        rc = cls.server.stop()
        assert rc == 0, f"exit status {rc}: {''.join(cls.server.err)}"

    def ok(self, path, body):
        status, text, _ = self.server.post(path, body)
        self.assertEqual(status, 200, text)
        return text

    def error(self, status, path, body=None, raw=None, method="POST", field=None):
        code, text, headers = self.server.request(method, path, body, raw=raw)
        self.assertEqual(code, status, text)
        self.assertNotIn("\n", text)
        e = json.loads(text)["error"]
        self.assertEqual(e["code"], status)
        if field:
            self.assertIn(field, e["message"])
        return e["message"], headers


class SameBytesAsTheCli(ServerTestBase):
    def test_health_and_models(self):
        status, text, _ = self.server.request("GET", "/health")
        self.assertEqual((status, json.loads(text)), (200, {"status": "ok"}))
        status, text, _ = self.server.request("GET", "/v1/models")
        served, info = json.loads(text), json.loads(cli("info", "-m", MODEL, "--json"))
        # Both processes hold the packed fp32 weights and no float copy (packed from the model's file).
        held, info_held = served.pop("memory_bytes"), info.pop("memory_bytes")
        # The directory's name, never the path the server was started with.
        self.assertEqual((served.pop("model"), info.pop("model")), ("fairytales-word", MODEL))
        self.assertEqual(served, info)
        self.assertEqual(held, info_held)

    def test_score(self):
        text = "\n".join(SENTENCES) + "\n"
        for opts, flags in (({}, []), ({"units": "bits", "entropy": True, "rank": True},
                                       ["--units", "bits", "--entropy", "--rank"]),
                            ({"context": "document", "eos": False}, ["--context", "document", "--no-eos"]),
                            ({"bos": False, "oov": "skip"}, ["--no-bos"]), ({"window": 3}, ["--window", "3"]),
                            ({"normalize": "ccnet"}, ["--normalize", "ccnet"]),
                            ({"units": "prob"}, ["--units", "prob"])):
            with self.subTest(opts=opts):
                lines = cli("score", "-m", MODEL, "--output-format", "jsonl", "-v", "word", *flags,
                            stdin=text).splitlines()
                want = '{"lines": [' + ", ".join(lines[:-1]) + '], "summary": ' + lines[-1] + "}"
                self.assertEqual(self.ok("/v1/score", dict(text=text, **opts)), want)

    def test_predict(self):
        for ctx in ("the old man", "once upon a", "zzqx"):
            want = cli("predict", "-m", MODEL, "--output-format", "jsonl", "--top", "5", ctx).strip()
            self.assertEqual(self.ok("/v1/predict", {"context": ctx, "top": 5}), want)
        both = cli("predict", "-m", MODEL, "--output-format", "jsonl", "--pad-to", "4", "a", "b c").splitlines()
        self.assertEqual(self.ok("/v1/predict", {"contexts": ["a", "b c"], "pad_to": 4}),
                         '{"predictions": [' + ", ".join(both) + "]}")
        # The pad states the first request computed are the server's from then on: later requests, longer
        # windows among them, start from them and still give the CLI's bytes.
        for pad, ctxs in ((4, ["b", "a b c d e"]), (7, ["the old man", ""]), (4, ["c"])):
            want = cli("predict", "-m", MODEL, "--output-format", "jsonl", "--pad-to", str(pad), *ctxs).splitlines()
            self.assertEqual(self.ok("/v1/predict", {"contexts": ctxs, "pad_to": pad}),
                             '{"predictions": [' + ", ".join(want) + "]}")

    def test_generate_and_its_stream(self):
        want = cli("generate", "-m", MODEL, "-p", "the king", "-n", "12", "--seed", "7", "--top-k", "20",
                   "--num-samples", "2", "--output-format", "jsonl").splitlines()
        body = {"prompt": "the king", "max_tokens": 12, "seed": 7, "top_k": 20, "num_samples": 2}
        self.assertEqual(self.ok("/v1/generate", body), '{"samples": [' + ", ".join(want) + "]}")
        stream = self.ok("/v1/generate", dict(body, stream=True))
        events = [e for e in stream.split("\n\n") if e]
        tokens = [json.loads(e[len("data: "):]) for e in events if e.startswith("data: ")]
        samples = [e.split("\n", 1)[1][len("data: "):] for e in events if e.startswith("event: sample")]
        self.assertEqual(samples, want)
        self.assertEqual(events[-1], "event: done\ndata: {}")
        for i, line in enumerate(want):
            rec = json.loads(line)
            self.assertEqual([{k: t[k] for k in ("token", "id", "prob", "logprob")} for t in tokens
                              if t["sample"] == i], rec["tokens"])

    def test_rescore(self):
        hyps = [{"utt": "u1", "hyp": "the old man went", "scores": {"ac": -120.5, "lm": -9.5}},
                {"utt": "u1", "hyp": "the old man want", "scores": {"ac": -119.0, "lm": -11.0}},
                {"utt": "u2", "hyp": "once upon a time", "id": "x-7", "scores": {"ac": -80.0, "lm": -6.0}},
                {"utt": "u2", "hyp": "once upon a tim", "scores": {"ac": -79.5, "lm": -8.0}}]
        jsonl = "".join(json.dumps(h) + "\n" for h in hyps)
        for opts, flags in (({"weights": {"ac": 0.1}}, ["--weight", "ac=0.1"]),
                            ({"weights": {"ac": 0.1}, "interpolate": 0.5, "ngram": "lm", "best": True},
                             ["--weight", "ac=0.1", "--interpolate", "0.5", "--ngram", "lm", "--best"])):
            with self.subTest(opts=opts):
                lines = cli("rescore", "-m", MODEL, "--input-format", "jsonl", "--output-format", "jsonl", *flags,
                            stdin=jsonl).splitlines()
                want = '{"hyps": [' + ", ".join(lines[:-1]) + '], "summary": ' + lines[-1] + "}"
                self.assertEqual(self.ok("/v1/rescore", dict(hyps=hyps, **opts)), want)
        self.error(400, "/v1/rescore", {"hyps": hyps, "weights": {"am": 1}}, field="no score named 'am'")
        self.error(400, "/v1/rescore", {"hyps": hyps[:1] + hyps[2:] + hyps[1:2]}, field="contiguous")

    def test_json_is_sent_uncompressed_even_to_a_client_that_accepts_gzip(self):
        status, text, headers = self.server.post("/v1/predict", {"context": "the old", "top": 2},
                                                 headers={"Accept-Encoding": "gzip, deflate, br"})
        self.assertEqual(status, 200)
        self.assertIsNone(headers.get("Content-Encoding"))
        self.assertEqual(headers.get("Content-Type"), "application/json; charset=utf-8")
        self.assertEqual(json.loads(text)["context"], "the old")

    def test_tokenize_and_detokenize(self):
        toks = json.loads(self.ok("/v1/tokenize", {"text": "The old zzqx"}))["tokens"]
        self.assertEqual([t["token"] for t in toks], ["the", "old", "zzqx"])
        self.assertEqual(toks[2]["oov"], True)
        ids = [t["id"] for t in toks]
        self.assertEqual(json.loads(self.ok("/v1/detokenize", {"ids": ids}))["text"], "the old <unk>")

    def test_concurrent_clients_get_the_lone_answers(self):
        contexts = [" ".join(s.split()[:k]) for s in SENTENCES if s for k in range(1, 5)]
        lone = {c: self.ok("/v1/predict", {"context": c, "top": 3}) for c in contexts}
        doc = "the old man went to the mountains ."
        words = cli("score", "-m", MODEL, "--output-format", "jsonl", "-v", "word", "--context", "document",
                    "--no-eos", stdin=doc + "\n").splitlines()[0]
        want_words = json.loads(words)["words"]

        def predicts(i):
            out = []
            for c in contexts[i::4] * 3:
                out.append(self.server.post("/v1/predict", {"context": c, "top": 3})[1] == lone[c])
            return all(out)

        def session(_):
            sid = json.loads(self.ok("/v1/sessions", {}))["id"]
            got = []
            for w in doc.split():
                got += json.loads(self.ok(f"/v1/sessions/{sid}/advance", {"text": w, "top": 0}))["words"]
            self.server.request("DELETE", f"/v1/sessions/{sid}")
            return got == want_words

        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            results = list(pool.map(predicts, range(4))) + list(pool.map(session, range(4)))
        self.assertEqual(results, [True] * 8)


class StreamPieces(unittest.TestCase):
    """Each streamed token's `piece` is the text it adds to what `lstmlm generate` prints (the prompt, then the
    pieces), on every tokenizer: a word model's spaces, a char model's none, SentencePiece's word starts;
    eos adds nothing."""

    def test_prompt_and_pieces_are_the_clis_text(self):
        for name, prompt in (("fairytales-word", "once upon a time"), ("charrnn-space", "once upon a time"),
                             ("docs-spm", "every example")):
            model = os.path.join(pyutil.SOURCE_DIR, "models", name)
            server = Server(model=model)
            try:
                for seed in (1, 2, 3):
                    body = {"prompt": prompt, "max_tokens": 40, "seed": seed, "num_samples": 2, "stream": True}
                    status, stream, _ = server.post("/v1/generate", body)
                    self.assertEqual(status, 200, stream)
                    tokens = [json.loads(e[len("data: "):]) for e in stream.split("\n\n") if e.startswith("data: ")]
                    r = subprocess.run([pyutil.CLI, "generate", "-m", model, "-p", prompt, "-n", "40", "--seed",
                                        str(seed), "--num-samples", "2"], capture_output=True, timeout=120)
                    self.assertEqual(r.returncode, 0, r.stderr)
                    want = r.stdout.decode("utf-8").split("=== sample 1 ===\n")
                    want = [want[0][len("=== sample 0 ===\n"):-1], want[1][:-1]]
                    for i in (0, 1):
                        mine = [t for t in tokens if t["sample"] == i]
                        self.assertEqual(prompt + "".join(t["piece"] for t in mine), want[i], (name, seed, i))
                        for t in mine:
                            if t["token"] == "<eos>" or t["token"] == "</s>":
                                self.assertEqual(t["piece"], "")
            finally:
                rc = server.stop()
                self.assertEqual(rc, 0, "".join(server.err))


class Int8(ServerTestBase):
    """A server of one low precision packs its weights once and answers as the CLI at that precision."""
    extra = ("--precision", "int8")

    def test_models_and_predict_at_int8(self):
        status, text, _ = self.server.request("GET", "/v1/models")
        self.assertEqual(status, 200)
        self.assertEqual(json.loads(text)["total_params"],
                         json.loads(cli("info", "-m", MODEL, "--json"))["total_params"])
        for ctx in ("the old man", "once upon a"):
            want = cli("predict", "-m", MODEL, "--precision", "int8", "--output-format", "jsonl", "--top", "5",
                       ctx).strip()
            self.assertEqual(self.ok("/v1/predict", {"context": ctx, "top": 5}), want)


class Sessions(ServerTestBase):
    extra = ("--max-sessions", "3")

    def new(self, **body):
        return json.loads(self.ok("/v1/sessions", body))["id"]

    def test_advance_is_document_scoring_then_prediction(self):
        sid = self.new()
        a = json.loads(self.ok(f"/v1/sessions/{sid}/advance", {"text": "the old", "top": 2}))
        b = json.loads(self.ok(f"/v1/sessions/{sid}/advance", {"text": "man zzqx", "top": 4}))
        line = json.loads(cli("score", "-m", MODEL, "--output-format", "jsonl", "-v", "word", "--context",
                              "document", "--no-eos", stdin="the old man zzqx\n").splitlines()[0])
        self.assertEqual(a["words"] + b["words"], line["words"])
        pred = json.loads(cli("predict", "-m", MODEL, "--output-format", "jsonl", "--top", "4",
                              "the old man zzqx"))
        self.assertEqual(b["top"], pred["top"])
        self.assertEqual(b["tokens"], 5)  # the start token and four words
        info = json.loads(self.server.request("GET", f"/v1/sessions/{sid}")[1])
        self.assertEqual(info, {"id": sid, "tokens": 5})

    def test_state_export_and_import(self):
        sid = self.new()
        self.ok(f"/v1/sessions/{sid}/advance", {"ids": [2, 32]})
        status, state, _ = self.server.request("GET", f"/v1/sessions/{sid}/state")
        self.assertEqual(status, 200)
        copy = self.new(state=json.loads(state))
        one = self.ok(f"/v1/sessions/{sid}/advance", {"text": "man who", "top": 3})
        two = self.ok(f"/v1/sessions/{copy}/advance", {"text": "man who", "top": 3})
        self.assertEqual(one, two)
        exported = json.loads(state)
        self.assertEqual((exported["version"], exported["tokens"]), (2, 3))
        raw = base64.b64decode(exported["bytes"])
        for b, why in ((raw[:-4], "truncated"), (raw[:12] + bytes([raw[12] ^ 1]) + raw[13:], "another model")):
            bad = dict(exported, bytes=base64.b64encode(b).decode())
            message, _ = self.error(400, "/v1/sessions", {"state": bad}, field="field 'state.bytes': ")
            self.assertIn(why, message)
        self.error(400, "/v1/sessions", {"state": dict(exported, bytes="abc")}, field="not base64")
        # An export of an earlier server (version 1: h, c and next as numbers) is still read.
        zeros = {"version": 1, "tokens": 0, "h": [[0.0] * 100], "c": [[0.0] * 100], "next": None}
        old, fresh = self.new(state=zeros), self.new(bos=False)
        self.assertEqual(self.ok(f"/v1/sessions/{old}/advance", {"text": "the old", "top": 3}),
                         self.ok(f"/v1/sessions/{fresh}/advance", {"text": "the old", "top": 3}))
        zeros["h"][0] = zeros["h"][0][:-1]
        self.error(400, "/v1/sessions", {"state": zeros}, field="state.h[0]")

    def test_delete_and_least_recently_used_eviction(self):
        ids = [self.new() for _ in range(3)]
        self.ok(f"/v1/sessions/{ids[0]}/advance", {"text": "the"})  # now ids[1] is the least recent
        extra = self.new()
        self.error(404, f"/v1/sessions/{ids[1]}/advance", {"text": "a"}, field=ids[1])
        for sid in (ids[0], ids[2], extra):
            self.assertEqual(self.server.request("DELETE", f"/v1/sessions/{sid}")[0], 200)
        self.error(404, f"/v1/sessions/{ids[0]}", method="GET")
        metrics = self.server.request("GET", "/metrics")[1]
        self.assertRegex(metrics, r"lstmlm_sessions_evicted_total [1-9]")


class BadRequests(ServerTestBase):
    extra = ("--max-body", "2000", "--max-tokens", "50", "--timeout", "2")

    def test_each_bad_request_names_its_field(self):
        self.error(400, "/v1/score", raw=b"{", field="not valid JSON")
        self.error(400, "/v1/score", raw=b"[1, 2]", field="a JSON object")
        self.error(400, "/v1/score", {"text": 5}, field="'text'")
        self.error(400, "/v1/score", {"text": "a", "contxt": "document"}, field="unknown field 'contxt'")
        self.error(400, "/v1/score", {"text": "a", "normalize": "nfd"}, field="'normalize'")
        self.error(400, "/v1/score", {}, field="'text': required")
        # Conflicts the library checks name the request's fields, never the CLI's options.
        for body, field in (({"text": "a", "rank": True, "aggregate": "words"}, "field 'rank'"),
                            ({"text": "a", "aggregate": "words"}, "field 'aggregate': \"words\" needs a char"),
                            ({"text": "1 2", "ids": True, "normalize": "lower"}, "field 'normalize'")):
            message, _ = self.error(400, "/v1/score", body, field=field)
            self.assertNotIn("--", message)
        self.error(400, "/v1/score", raw=b'{"text": "caf\xe9"}', field="UTF-8")
        self.error(400, "/v1/predict", {"context": "a", "top": -1}, field="'top'")
        self.error(400, "/v1/predict", {"context": "a", "contexts": ["b"]}, field="'contexts'")
        self.error(400, "/v1/predict", {"context": "a", "pad_to": 2, "window": 2}, field="'pad_to'")
        self.error(400, "/v1/generate", {"temperature": "hot"}, field="'temperature'")
        self.error(400, "/v1/generate", {"top_p": 2}, field="'top_p'")
        self.error(400, "/v1/generate", {"top_p": 0, "max_tokens": 5}, field="field 'top_p'")  # the sampler's check
        self.error(400, "/v1/detokenize", {"ids": [1, 100000]}, field="'ids'")
        self.error(404, "/v1/sessions/0123abcd/advance", {"text": "a"}, field="0123abcd")
        self.error(404, "/v1/nothing", {}, field="no endpoint")
        self.error(413, "/v1/score", raw=json.dumps({"text": "a " * 2000}).encode())
        self.error(413, "/v1/generate", {"max_tokens": 40, "num_samples": 2}, field="--max-tokens")
        self.error(413, "/v1/tokenize", {"text": "a " * 60}, field="--max-tokens")
        # One bound over every text a request tokenizes (60 words here, under --max-body): score's lines, the
        # hypotheses of a rescore, a generate prompt.
        self.error(413, "/v1/score", {"text": "the old man\n" * 20}, field="--max-tokens")
        hyps = [{"utt": "u", "hyp": "the old man went to the mountains", "scores": {}} for _ in range(9)]
        self.error(413, "/v1/rescore", {"hyps": hyps}, field="--max-tokens")
        self.error(413, "/v1/generate", {"prompt": "the old man " * 20, "max_tokens": 1}, field="--max-tokens")
        self.assertEqual(self.server.post("/v1/score", {"text": "the old man\n" * 10})[0], 200)
        # The server is unharmed.
        self.assertEqual(self.server.post("/v1/predict", {"context": "the"})[0], 200)

    def test_slow_and_vanishing_clients_do_not_stop_the_others(self):
        slow = socket.create_connection(("127.0.0.1", self.server.port))
        slow.sendall(b"POST /v1/score HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100\r\n\r\n{")
        gone = socket.create_connection(("127.0.0.1", self.server.port))
        body = json.dumps({"prompt": "the", "max_tokens": 50, "stream": True}).encode()
        gone.sendall(b"POST /v1/generate HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                     b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
        gone.recv(64)
        gone.close()  # mid-stream
        self.assertEqual(self.server.post("/v1/predict", {"context": "the"})[0], 200)
        slow.settimeout(30)
        # --timeout 2: the half-sent request is dropped, not waited on forever.
        reply = slow.recv(4096)
        self.assertTrue(reply == b"" or reply.startswith(b"HTTP/1.1 4"), reply)
        slow.close()
        self.assertEqual(self.server.request("GET", "/health")[0], 200)


class QueueAndKey(unittest.TestCase):
    def test_a_full_queue_answers_503_with_retry_after(self):
        s = Server("--max-queue", "1", "--batch-wait-us", "400000", "--max-batch", "64")
        try:
            first = concurrent.futures.ThreadPoolExecutor(1).submit(s.post, "/v1/predict", {"context": "the"})
            time.sleep(0.1)
            status, text, headers = s.post("/v1/predict", {"context": "a"})
            self.assertEqual(status, 503, text)
            self.assertEqual(headers.get("Retry-After"), "1")
            self.assertIn("--max-queue", json.loads(text)["error"]["message"])
            self.assertEqual(first.result()[0], 200)
        finally:
            self.assertEqual(s.stop(), 0)

    def test_api_key(self):
        with tempfile.NamedTemporaryFile("w", suffix=".key", delete=False) as f:
            f.write("s3cret\n")
        self.addCleanup(os.unlink, f.name)
        s = Server("--api-key-file", f.name)
        try:
            self.assertEqual(s.request("GET", "/health")[0], 200)
            self.assertEqual(s.post("/v1/predict", {"context": "the"})[0], 401)
            self.assertEqual(s.post("/v1/predict", {"context": "the"},
                                    headers={"Authorization": "Bearer nope"})[0], 401)
            self.assertEqual(s.post("/v1/predict", {"context": "the"},
                                    headers={"Authorization": "Bearer s3cret"})[0], 200)
        finally:
            self.assertEqual(s.stop(), 0)

    def test_sigterm_finishes_in_flight_requests(self):
        s = Server("--batch-wait-us", "300000")
        fut = concurrent.futures.ThreadPoolExecutor(1).submit(s.post, "/v1/predict", {"context": "the"})
        time.sleep(0.1)
        s.proc.send_signal(signal.SIGTERM)
        self.assertEqual(fut.result()[0], 200)
        self.assertEqual(s.stop(signal_it=False), 0)  # a second signal would end it at once
        self.assertIn("lstmlm serve: stopped\n", s.err)

    def test_idle_sessions_expire_on_time(self):
        s = Server("--session-ttl", "1")
        try:
            status, text, _ = s.post("/v1/sessions", {})
            self.assertEqual(status, 200, text)
            self.assertIn("lstmlm_sessions_live 1\n", s.request("GET", "/metrics")[1])
            time.sleep(2.5)  # past the TTL and the once-a-second sweep, with no request touching the store
            metrics = s.request("GET", "/metrics")[1]
            self.assertIn("lstmlm_sessions_live 0\n", metrics)
            self.assertIn("lstmlm_sessions_evicted_total 1\n", metrics)
        finally:
            self.assertEqual(s.stop(), 0)

    def test_metrics_format(self):
        s = Server()
        try:
            s.post("/v1/predict", {"context": "the"})
            s.post("/v1/score", {"text": "the king\n"})
            s.post("/v1/score", {"nope": 1})
            text = s.request("GET", "/metrics")[1]
        finally:
            self.assertEqual(s.stop(), 0)
        self.assertIn("# TYPE lstmlm_requests_total counter\n", text)
        self.assertIn('lstmlm_requests_total{endpoint="/v1/score",status="400"} 1\n', text)
        self.assertIn('lstmlm_requests_total{endpoint="/v1/predict",status="200"} 1\n', text)
        self.assertIn("lstmlm_tokens_scored_total 3\n", text)  # the king <eos>
        self.assertIn('lstmlm_request_seconds_bucket{endpoint="/v1/score",le="+Inf"} 2\n', text)
        self.assertIn('lstmlm_batch_rows_bucket{le="+Inf"} 1\n', text)
        for line in text.splitlines():
            self.assertRegex(line, r'^(# (HELP|TYPE) \w+ .+|\w+(\{[^}]*\})? [0-9.e+-]+)$')


if __name__ == "__main__":
    unittest.main()
