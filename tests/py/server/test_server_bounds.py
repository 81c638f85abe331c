"""`lstmlm serve` against clients that try to take it down or starve everyone (127.0.0.1, a free port, every
connection and server closed by the test that opened it): request JSON nested past the model files' 64 levels
is refused at parse time on every endpoint that quotes a value; more slow connections than workers leave
/health and other clients answered; compressed bodies, oversized chunked bodies and headers get 415/413/431;
/metrics labels are route templates whatever path a client sends."""
import json
import socket
import threading
import time
import unittest

from server.test_server import Server, ServerTestBase


def raw_exchange(port, data, timeout=10):
    """Sends `data` on a new connection and returns what the server answers before it closes (or `timeout`)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        try:
            s.sendall(data)
        except (BrokenPipeError, ConnectionResetError):
            pass
        out = b""
        try:
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                out += chunk
        except (socket.timeout, ConnectionResetError):
            pass
        return out


class NestedJson(ServerTestBase):

    def test_deep_nesting_is_refused_everywhere_and_the_server_lives(self):
        deep = "[" * 100000 + "]" * 100000  # ~200 KB: past the 64 levels, far past the C++ stack's recursion
        bodies = {
            "/v1/score": '{"text": %s}' % deep,                      # a wrong type, quoted in the message
            "/v1/predict": '{"context": [%s]}' % deep,                 # a context element
            "/v1/rescore": '{"hypotheses": [%s]}' % deep,              # a rescore hypothesis
            "/v1/sessions": '{"state": {"version": %s}}' % deep,       # state.version
            "/v1/generate": deep,                                      # a body that is not an object
        }
        for path, body in bodies.items():
            status, text, _ = self.server.request("POST", path, raw=body.encode(),
                                                  headers={"Content-Type": "application/json"})
            self.assertEqual(status, 400, (path, text[:200]))
            self.assertIn("nested deeper than 64 levels", json.loads(text)["error"]["message"], path)
        self.assertEqual(self.server.request("GET", "/health")[0], 200)

    def test_values_below_the_bound_are_quoted_cut(self):
        nested = "[" * 60 + "1" + "]" * 60  # within the bound: read, then refused as a wrong type
        status, text, _ = self.server.request("POST", "/v1/score", raw=('{"text": %s}' % nested).encode(),
                                              headers={"Content-Type": "application/json"})
        self.assertEqual(status, 400, text)
        msg = json.loads(text)["error"]["message"]
        self.assertIn("field 'text'", msg)
        self.assertTrue(msg.endswith("..."), msg)
        self.assertLess(len(msg), 200)

    def test_bytes_after_a_nul_are_not_ignored(self):
        status, text, _ = self.server.request("POST", "/v1/score", raw=b'{"text": "a"}\0{"x": 1}',
                                              headers={"Content-Type": "application/json"})
        self.assertEqual(status, 400, text)
        self.assertIn("NUL", text)


class SlowClients(ServerTestBase):
    """2 workers, one reserved for whole requests; 6 connections trickle a byte a second."""

    extra = ("--http-threads", "2", "--timeout", "20")

    def test_trickling_connections_starve_nobody(self):
        stop = threading.Event()
        socks = []

        def trickle(s):
            request = b"POST /v1/score HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100\r\n\r\n" + b" " * 100
            try:
                for b in request:  # at most ~150 s, ended by `stop` long before
                    if stop.is_set():
                        return
                    s.sendall(bytes([b]))
                    time.sleep(1.0)
            except OSError:
                pass  # dropped by the server: what the test wants

        threads = []
        try:
            for _ in range(6):
                s = socket.create_connection(("127.0.0.1", self.server.port), timeout=30)
                socks.append(s)
                t = threading.Thread(target=trickle, args=(s,), daemon=True)
                t.start()
                threads.append(t)
            time.sleep(0.5)
            # While they trickle, /health and a real request are answered within a few seconds each.
            for _ in range(3):
                t0 = time.monotonic()
                self.assertEqual(self.server.request("GET", "/health")[0], 200)
                status, text, _ = self.server.post("/v1/score", {"text": "the old man"})
                self.assertEqual(status, 200, text)
                self.assertLess(time.monotonic() - t0, 6.0)
                time.sleep(0.5)
            # A trickler is answered 408 and closed (rate below the minimum after the grace).
            socks[0].settimeout(10)
            answer = b""
            try:
                while True:
                    chunk = socks[0].recv(4096)
                    if not chunk:
                        break
                    answer += chunk
            except (socket.timeout, ConnectionResetError):
                pass
            self.assertTrue(answer.startswith(b"HTTP/1.1 408"), answer[:100])
        finally:
            stop.set()
            for t in threads:
                t.join(timeout=5)
            for s in socks:
                s.close()
        status, text, _ = self.server.request("GET", "/metrics")
        self.assertEqual(status, 200)
        dropped = sum(int(line.rsplit(" ", 1)[1]) for line in text.splitlines()
                      if line.startswith("lstmlm_http_dropped_total{"))
        self.assertGreaterEqual(dropped, 1)


class BusyKeepAlive(ServerTestBase):
    """2 workers and 6 clients that each keep one connection and send their next request as soon as the last
    is answered (a closed loop, as load generators and busy services do): every client is served, none waits
    out the run behind the two that got a worker first."""

    extra = ("--http-threads", "2")

    def test_more_busy_clients_than_workers_all_get_answers(self):
        import http.client
        import json as json_
        stop = threading.Event()
        answered = [0] * 6
        errors = []

        def client(i):
            conn = None
            try:
                while not stop.is_set():
                    if conn is None:
                        conn = http.client.HTTPConnection("127.0.0.1", self.server.port, timeout=30)
                    conn.request("POST", "/v1/predict", body=json_.dumps({"context": "the old man", "top": 3}),
                                 headers={"Content-Type": "application/json"})
                    r = conn.getresponse()
                    r.read()
                    if r.status != 200:
                        errors.append(r.status)
                        return
                    answered[i] += 1
                    if r.getheader("Connection", "").lower() == "close":
                        conn.close()  # the server asked to take turns: reconnect
                        conn = None
            except OSError as e:
                errors.append(repr(e))
            finally:
                if conn is not None:
                    conn.close()

        threads = [threading.Thread(target=client, args=(i,), daemon=True) for i in range(6)]
        for t in threads:
            t.start()
        time.sleep(3)
        stop.set()
        for t in threads:
            t.join(timeout=30)
        self.assertEqual(errors, [])
        # Before the turn-taking, 4 of the 6 got one answer in 3 s, at the end ([10718, 10644, 1, 1, 1, 1]);
        # with it the answers spread (about 2,000 each). Counting answers, not times: every client got at least
        # a tenth of an even share.
        even = sum(answered) / len(answered)
        self.assertTrue(all(n >= even / 10 for n in answered), answered)


class Sizes(ServerTestBase):
    extra = ("--max-body", "1024")

    def test_compressed_bodies_are_refused_before_reading(self):
        import gzip
        body = gzip.compress(json.dumps({"text": "a " * 200000}).encode())  # inflates to 400 KB > --max-body
        status, text, _ = self.server.request("POST", "/v1/score", raw=body,
                                              headers={"Content-Encoding": "gzip",
                                                       "Content-Type": "application/json"})
        self.assertEqual(status, 415, text)
        self.assertIn("Content-Encoding", json.loads(text)["error"]["message"])

    def test_chunked_body_past_max_body(self):
        body = json.dumps({"text": "the " * 600}).encode()  # 2.4 KB decoded > 1024
        chunks = b"".join(b"%x\r\n%s\r\n" % (len(body[i:i + 100]), body[i:i + 100]) for i in range(0, len(body), 100))
        answer = raw_exchange(self.server.port, b"POST /v1/score HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
                              b"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n" + chunks +
                              b"0\r\n\r\n")
        self.assertTrue(answer.startswith(b"HTTP/1.1 413"), answer[:200])
        # Far past the bound on the wire: dropped while sent, not buffered whole.
        answer = raw_exchange(self.server.port, b"POST /v1/score HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                              b"Transfer-Encoding: chunked\r\n\r\n" + b"1000\r\n" + b"x" * 4096 * 2 + b"\r\n")
        self.assertTrue(answer.startswith(b"HTTP/1.1 413"), answer[:200])

    def test_declared_length_far_past_the_bound_is_not_read(self):
        answer = raw_exchange(self.server.port, b"POST /v1/score HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                              b"Content-Length: 1000000000000\r\n\r\n" + b"x" * 8192)
        self.assertTrue(answer.startswith(b"HTTP/1.1 413"), answer[:200])

    def test_headers_past_64_kib(self):
        headers = b"".join(b"X-Filler-%d: %s\r\n" % (i, b"a" * 8000) for i in range(12))
        answer = raw_exchange(self.server.port, b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n" + headers + b"\r\n")
        self.assertTrue(answer.startswith(b"HTTP/1.1 431"), answer[:200])
        self.assertEqual(self.server.request("GET", "/health")[0], 200)

    def test_metrics_labels_are_route_templates(self):
        for path in ["/v1/sessions/abc/x%7Bevil%3D%221%22%7D", "/v1/sessions/zz", "/v1/sessions/ab/state/more",
                     "/nowhere%C3%A9"]:
            self.server.request("GET", path)
        text = self.server.request("GET", "/metrics")[1]
        for line in text.splitlines():
            if line.startswith("lstmlm_requests_total{"):
                self.assertNotIn("evil", line)
                self.assertNotIn("zz", line)
                self.assertNotIn("more", line)
        self.assertIn('endpoint="other"', text)


class ResponseHeads(ServerTestBase):
    """A response's head is held back to go out with its body in one send: a head without a body, an
    informational head and a streamed one must still reach the client at once."""

    def read_until(self, s, marker, limit_s=5):
        out, deadline = b"", time.monotonic() + limit_s
        while marker not in out and time.monotonic() < deadline:
            s.settimeout(max(0.01, deadline - time.monotonic()))
            try:
                chunk = s.recv(65536)
            except socket.timeout:
                break
            if not chunk:
                break
            out += chunk
        return out

    def test_heads_without_a_body_informational_and_streamed(self):
        port = self.server.port
        with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
            # HEAD: a head alone, then a keep-alive request on the same connection is answered too.
            s.sendall(b"HEAD /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            head = self.read_until(s, b"\r\n\r\n")
            self.assertTrue(head.startswith(b"HTTP/1.1 200"), head)
            s.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            self.assertIn(b'"ok"', self.read_until(s, b'"ok"'))
        body = json.dumps({"context": "once upon a", "top": 1}).encode()
        with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
            # Expect: 100-continue: the 100 comes before the body is sent (a held one would never come).
            s.sendall(b"POST /v1/predict HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                      b"Expect: 100-continue\r\nContent-Length: " + str(len(body)).encode() + b"\r\n\r\n")
            self.assertTrue(self.read_until(s, b"\r\n\r\n").startswith(b"HTTP/1.1 100"))
            s.sendall(body)
            answer = self.read_until(s, b"}]}")
            self.assertTrue(answer.startswith(b"HTTP/1.1 200"), answer)
            self.assertIn(b'"type": "prediction"', answer)
        gen = json.dumps({"prompt": "once upon a", "max_tokens": 3, "stream": True, "seed": 1}).encode()
        with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
            s.sendall(b"POST /v1/generate HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                      b"Content-Length: " + str(len(gen)).encode() + b"\r\n\r\n" + gen)
            streamed = self.read_until(s, b'"type": "token"')
            self.assertTrue(streamed.startswith(b"HTTP/1.1 200"), streamed)
            self.assertIn(b"text/event-stream", streamed)


class Values(ServerTestBase):

    def test_lower_bounds_and_numbers_past_a_double(self):
        for body, field in (({"max_tokens": 0}, "'max_tokens'"), ({"prompt": "a", "pad_to": 0}, "'pad_to'")):
            status, text, _ = self.server.post("/v1/generate", body)
            self.assertEqual(status, 400, text)
            self.assertIn(field, json.loads(text)["error"]["message"])
        status, text, _ = self.server.request("POST", "/v1/generate", raw=b'{"temperature": 1e400}',
                                              headers={"Content-Type": "application/json"})
        self.assertEqual(status, 400, text)


class WebPages(ServerTestBase):
    """A loopback server answers this machine's clients: DNS rebinding (a page's own name resolving to 127.0.0.1)
    and form posts (a content type a page may send without asking) from pages elsewhere are refused."""


    def test_foreign_hosts_origins_and_forms_are_refused(self):
        body = json.dumps({"text": "the old man"}).encode()
        for headers, status, why in (({"Host": "evil.example:8080"}, 403, "Host"),
                                     ({"Origin": "http://evil.example"}, 403, "Origin"),
                                     ({"Content-Type": "text/plain"}, 415, "Content-Type"),
                                     ({"Content-Type": "application/x-www-form-urlencoded"}, 415, "Content-Type")):
            code, text, _ = self.server.request("POST", "/v1/score", raw=body, headers=headers)
            self.assertEqual(code, status, (headers, text))
            self.assertIn(why, json.loads(text)["error"]["message"])
        for headers in ({"Host": "localhost:1"}, {"Host": "[::1]:1"}, {"Origin": f"http://127.0.0.1:{self.server.port}"},
                        {"Content-Type": "application/json; charset=utf-8"}):
            code, text, _ = self.server.request("POST", "/v1/score", raw=body, headers=headers)
            self.assertEqual(code, 200, (headers, text))
        # /v1/models names the model, not the path it was served from.
        models = json.loads(self.server.request("GET", "/v1/models")[1])
        self.assertEqual(models["model"], "fairytales-word")


class CharPrefix(unittest.TestCase):
    def test_a_prefix_is_bounded_where_it_would_be_repeated_in_every_candidate(self):
        import os
        from server.test_server import pyutil
        server = Server(model=os.path.join(pyutil.SOURCE_DIR, "models", "charrnn-space"))
        try:
            status, text, _ = server.post("/v1/predict", {"context": "the ", "prefix": "k" * 300, "top": 64})
            self.assertEqual(status, 400, text[:200])
            self.assertIn("field 'prefix': 300 bytes, at most 256", json.loads(text)["error"]["message"])
            status, text, _ = server.post("/v1/predict", {"context": "the ", "prefix": "ki", "top": 3})
            self.assertEqual(status, 200, text[:200])
        finally:
            self.assertEqual(server.stop(), 0)


class CharCompletionsInterleave(unittest.TestCase):
    def test_other_requests_are_answered_while_character_completions_run(self):
        """Three requests of 16 character-model completions each (a beam search of width 64 per context)
        are in flight; a plain prediction sent after them is answered before any of them is: it is batched
        by the scheduler, which the completions do not hold (they run on the pool's engines, one context per
        lease). Were the scheduler running a whole request's beam searches, the prediction would wait behind
        them and come back after the first. The answers' order is asserted, not their times."""
        import os
        from server.test_server import pyutil
        server = Server("--http-threads", "8", model=os.path.join(pyutil.SOURCE_DIR, "models", "charrnn-space"))
        try:
            heavy = {"contexts": ["once upon a time there was a "] * 16, "prefix": "t", "top": 64}
            t0 = time.monotonic()
            self.assertEqual(server.post("/v1/predict", heavy)[0], 200)
            alone = time.monotonic() - t0
            answered, lock = [], threading.Lock()  # ("heavy" | "light", status) in the order they came back

            def run(name, body):
                status = server.post("/v1/predict", body)[0]
                with lock:
                    answered.append((name, status))

            threads = [threading.Thread(target=run, args=("heavy", heavy)) for _ in range(3)]
            for t in threads:
                t.start()
            time.sleep(alone / 10)  # not an assertion: lets the heavy requests start before the light one
            run("light", {"context": "once upon a time", "top": 3})
            for t in threads:
                t.join()
            self.assertEqual(sorted(answered), [("heavy", 200)] * 3 + [("light", 200)])
            self.assertEqual(answered[0][0], "light", f"the prediction waited for a completion: {answered}")
        finally:
            self.assertEqual(server.stop(), 0)


class Keys(unittest.TestCase):
    def test_an_empty_or_unreadable_key_is_refused_before_serving(self):
        import subprocess
        from server.test_server import pyutil, MODEL
        cli = pyutil.require_cli()
        for args, why in ((["--api-key", ""], "an empty key"), (["--api-key-file", "/dev/zero"], "not a regular file"),
                          (["--api-key", "a\x01b"], "control byte")):
            r = subprocess.run([cli, "serve", "-m", MODEL, "--port", "0", *args], capture_output=True, text=True,
                               timeout=60)
            self.assertEqual(r.returncode, 2, (args, r.stderr))
            self.assertIn(why, r.stderr)
            self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)


if __name__ == "__main__":
    unittest.main()
