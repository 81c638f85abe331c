"""The page `lstmlm serve` serves at /, in headless Chromium (Debian's chromium, driven through the DevTools
protocol over a pipe, tests/py/cdp.py): typing a context shows the server's next-word suggestions, the Generate
button streams a generation coloured by probability, and the page throws no JavaScript exception. With
LSTMLM_UPDATE_SCREENSHOT=1 the screenshot is written to docs/serving-page.png (never otherwise)."""
import base64
import http.client
import json
import os
import signal
import struct
import subprocess
import sys
import threading
import time
import unittest
import zlib

import cdp
import pyutil

MODEL = os.path.join(pyutil.SOURCE_DIR, "models", "fairytales-word")
SCREENSHOT = os.path.join(pyutil.SOURCE_DIR, "docs", "serving-page.png")
PROMPT = "once upon a time"
TOKENS = 30  # the page's default number of tokens
SEED = 6  # typed over the page's default, 1: 30 tokens without eos, of all four probability classes


class Server:
    """lstmlm serve on 127.0.0.1 and a free port (the address read from stderr)."""

    def __init__(self):
        self.proc = subprocess.Popen([pyutil.require_cli(), "serve", "-m", MODEL, "--port", "0", "--threads", "1"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self.err = [self.proc.stderr.readline()]
        if "listening on http://127.0.0.1:" not in self.err[0]:
            self.proc.kill()
            self.proc.wait(timeout=10)
            raise AssertionError(f"no address on stderr: {self.err[0]!r}")
        self.port = int(self.err[0].rsplit(":", 1)[1])
        self.drain = threading.Thread(target=lambda: self.err.extend(self.proc.stderr), daemon=True)
        self.drain.start()
        deadline = time.monotonic() + 30
        while self.request("GET", "/health")[0] != 200:
            if time.monotonic() > deadline:
                raise AssertionError("the server never became ready")
            time.sleep(0.05)

    def request(self, method, path, body=None):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        try:
            c.request(method, path, body=None if body is None else json.dumps(body).encode(),
                      headers={"Content-Type": "application/json"})
            r = c.getresponse()
            return r.status, r.read().decode("utf-8")
        finally:
            c.close()

    def post(self, path, body):
        status, text = self.request("POST", path, body)
        if status != 200:
            raise AssertionError(f"{path} {body}: {status} {text}")
        return json.loads(text)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)
            rc = "killed after 20 s"
        self.drain.join(timeout=10)
        self.proc.stderr.close()
        return rc


def png_size(data):
    """(width, height) of a PNG, after checking its signature, every chunk's CRC and that the image data inflates
    to the size the header announces (8-bit RGB or RGBA, not interlaced)."""
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise AssertionError("not a PNG: " + repr(data[:16]))
    at, idat, header = 8, b"", None
    while at < len(data):
        n, kind = struct.unpack(">I4s", data[at:at + 8])
        body = data[at + 8:at + 8 + n]
        if struct.unpack(">I", data[at + 8 + n:at + 12 + n])[0] != zlib.crc32(kind + body):
            raise AssertionError(f"PNG chunk {kind!r}: bad CRC")
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        elif kind == b"IEND":
            break
        at += 12 + n
    width, height, depth, colour, _, _, interlace = header
    if depth != 8 or colour not in (2, 6) or interlace:
        raise AssertionError(f"unexpected PNG format {header}")
    if len(zlib.decompress(idat)) != height * (1 + width * (3 if colour == 2 else 4)):
        raise AssertionError("PNG image data of the wrong size")
    return width, height


class ThePageInABrowser(unittest.TestCase):
    def setUp(self):
        if not os.path.exists(cdp.CHROMIUM):
            print(f"SKIP: {cdp.CHROMIUM} not present (Debian's chromium; scripts/install-deps installs it)",
                  file=sys.stderr)
            raise unittest.SkipTest(f"{cdp.CHROMIUM} not present")
        self.server = Server()
        self.browser = None
        try:
            self.browser = cdp.Browser(width=900, height=700)
        except BaseException:
            self.server.stop()
            raise

    def tearDown(self):
        try:
            if self.browser:
                self.browser.close()
        finally:
            rc = self.server.stop()
        self.assertEqual(rc, 0, "".join(self.server.err))

    def test_suggestions_generation_and_screenshot(self):
        try:
            self.drive()
        except cdp.CdpError as e:
            raise AssertionError(f"{e}\nchromium's stderr (end):\n{self.browser.stderr()}") from None

    def drive(self):
        page = cdp.Page(self.browser, f"http://127.0.0.1:{self.server.port}/")
        page.wait_for("document.getElementById('model').textContent === 'model: ok'")
        # The suggestions for the empty context, shown at load, are marked: the next ones are those of the typing.
        page.wait_for("document.querySelectorAll('#suggestions button.suggestion').length > 0")
        page.js("document.querySelectorAll('#suggestions button').forEach(b => b.dataset.stale = '1')")

        page.type_into("#context", "the old")
        self.assertEqual(page.js("document.getElementById('context').value"), "the old")
        page.wait_for("document.querySelectorAll('#suggestions button.suggestion:not([data-stale])').length > 0")
        shown = page.js("Array.from(document.querySelectorAll('#suggestions button.suggestion'))"
                        ".map(b => b.firstChild.textContent.trim())")
        want = self.server.post("/v1/predict", {"context": "the old"})["top"]
        self.assertEqual(shown[0], want[0]["token"])
        self.assertEqual(shown, [c["token"] for c in want[:len(shown)]])
        self.assertEqual(len(shown), 8)  # the page asks for the top 8

        page.type_into("#prompt", PROMPT)
        page.type_into("#seed", str(SEED), replace=True)
        self.assertEqual(page.js("[document.getElementById('n').value, document.getElementById('seed').value]"),
                         [str(TOKENS), str(SEED)])
        page.click("#go")
        page.wait_for("document.getElementById('generated').dataset.done === '1'", timeout=20)
        spans = page.js("Array.from(document.querySelectorAll('#generated span'))"
                        ".map(s => [s.className, s.textContent])")
        sample = self.server.post("/v1/generate", {"prompt": PROMPT, "max_tokens": TOKENS, "seed": SEED})
        sample = sample["samples"][0]
        if sample["stopped_at_eos"]:
            self.assertLessEqual(len(spans), TOKENS)
        else:
            self.assertEqual(len(spans), TOKENS)
        self.assertEqual([text for _, text in spans], [t["token"] + " " for t in sample["tokens"]])
        for (classes, _), t in zip(spans, sample["tokens"]):
            names = classes.split()
            self.assertIn("token", names)
            levels = [c for c in names if c in ("p1", "p2", "p3", "p4")]
            self.assertEqual(len(levels), 1, classes)
            p = t["prob"]
            self.assertEqual(levels[0], "p1" if p > 0.1 else "p2" if p > 0.01 else "p3" if p > 0.001 else "p4", t)
        self.assertEqual(page.js("document.getElementById('error').textContent"), "")
        self.assertEqual(page.exceptions(), [])

        # The whole page in one image: the viewport as tall as the document.
        height = page.js("Math.ceil(document.documentElement.scrollHeight)")
        page.call("Emulation.setDeviceMetricsOverride",
                  {"width": 900, "height": height, "deviceScaleFactor": 1, "mobile": False})
        page.js("window.scrollTo(0, 0); new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")
        png = base64.b64decode(page.call("Page.captureScreenshot", {"format": "png"})["data"])
        self.assertEqual(png_size(png), (900, height))
        if os.environ.get("LSTMLM_UPDATE_SCREENSHOT") == "1":
            with open(SCREENSHOT, "wb") as f:
                f.write(png)
            print(f"wrote {SCREENSHOT}", file=sys.stderr)


if __name__ == "__main__":
    unittest.main()
