"""The page `lstmlm serve` serves at /, in headless Chromium (Debian's chromium, driven through the DevTools
protocol over a pipe, tests/py/cdp.py), on a word, a character and a SentencePiece model: the model's name and
vocabulary; the next-word box completing as a keyboard does (the half-typed word with `prefix`, a character
model's next words to the word boundary, a subword model's next pieces) and a click putting the completion in
place; a generation started with Enter, shown as the prompt then the text `lstmlm generate` prints (the tokens
joined as the tokenizer joins, no eos), coloured by probability; and no JavaScript exception. With
LSTMLM_UPDATE_SCREENSHOT=1 each model's screenshot is written to docs/ (never otherwise)."""
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

MODELS = os.path.join(pyutil.SOURCE_DIR, "models")
TOP = 12  # what the page asks for; it shows 8, special tokens left out


class Server:
    """lstmlm serve on 127.0.0.1 and a free port (the address read from stderr)."""

    def __init__(self, model, *extra):
        self.key = extra[extra.index("--api-key") + 1] if "--api-key" in extra else None
        self.proc = subprocess.Popen([pyutil.require_cli(), "serve", "-m", model, "--port", "0", "--threads", "1",
                                      *extra],
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
            headers = {"Content-Type": "application/json"}
            if self.key:
                headers["Authorization"] = "Bearer " + self.key
            c.request(method, path, body=None if body is None else json.dumps(body).encode(), headers=headers)
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
    def open(self, name, *extra):
        if not os.path.exists(cdp.CHROMIUM):
            print(f"SKIP: {cdp.CHROMIUM} not present (Debian's chromium; scripts/install-deps installs it)",
                  file=sys.stderr)
            raise unittest.SkipTest(f"{cdp.CHROMIUM} not present")
        self.model_dir = os.path.join(MODELS, name)
        self.server = Server(self.model_dir, *extra)
        self.addCleanup(self.stop_server)
        self.browser = cdp.Browser(width=900, height=700)
        self.addCleanup(self.browser.close)
        self.info = json.loads(self.server.request("GET", "/v1/models")[1])
        self.page = cdp.Page(self.browser, f"http://127.0.0.1:{self.server.port}/")
        return self.page

    def stop_server(self):
        rc = self.server.stop()
        self.assertEqual(rc, 0, "".join(self.server.err))

    # --- what the page shows, computed here from the server's answers -----------------------------------
    def special(self, token):
        t = self.info["tokenizer"]
        return token in (t["eos_token"], t["bos_token"], t["unk_token"])

    def predicted(self, context, prefix=None):
        body = {"context": context, "top": TOP}
        if prefix:
            body["prefix"] = prefix
        return [c["token"] for c in self.server.post("/v1/predict", body)["top"] if not self.special(c["token"])]

    def suggestions(self, text):
        """Types `text` over the context box and returns the labels of the suggestions it brings."""
        page = self.page
        page.js("document.querySelectorAll('#suggestions button').forEach(b => b.dataset.stale = '1')")
        page.type_into("#context", text, replace=True)
        self.assertEqual(page.js("document.getElementById('context').value"), text)
        page.wait_for("document.querySelectorAll('#suggestions button.suggestion:not([data-stale])').length > 0")
        return self.labels()

    def labels(self):
        return self.page.js("Array.from(document.querySelectorAll('#suggestions button.suggestion'))"
                            ".map(b => b.firstChild.textContent.replace(/ $/, ''))")

    def click_suggestion(self, label):
        page = self.page
        index = self.labels().index(label)
        page.js("document.querySelectorAll('#suggestions button').forEach(b => b.dataset.stale = '1')")
        page.click(f"#suggestions button.suggestion:nth-child({index + 1})")
        page.wait_for("document.querySelectorAll('#suggestions button.suggestion:not([data-stale])').length > 0")
        return page.js("document.getElementById('context').value")

    # --- the parts every model shares ------------------------------------------------------------------
    def check_model_line(self):
        t = self.info["tokenizer"]
        want = (f"{self.info['model']}: a {t['type']} model, vocabulary of {self.info['vocab_size']:,} tokens"
                + (" (lowercase)" if t["lowercase"] else ""))
        self.page.wait_for(f"document.getElementById('model').textContent === {json.dumps(want)}")

    def check_generation(self, prompt, tokens, seed):
        page = self.page
        page.type_into("#n", str(tokens), replace=True)
        page.type_into("#seed", str(seed), replace=True)
        page.type_into("#prompt", prompt, replace=True)
        page.press("Enter", "Enter", 13, "\r")  # Enter generates: no click
        page.wait_for("document.getElementById('generated').dataset.done === '1'", timeout=30)
        shown = page.js("document.getElementById('generated').textContent")
        r = subprocess.run([pyutil.require_cli(), "generate", "-m", self.model_dir, "-p", prompt, "-n", str(tokens),
                            "--seed", str(seed)], capture_output=True, timeout=60)  # bytes: "\r" kept
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(shown, r.stdout.decode("utf-8")[:-1])  # the prompt, then the text, as the CLI prints them
        self.assertNotIn(self.info["tokenizer"]["eos_token"] or "<eos>", shown)
        self.assertTrue(shown.startswith(prompt))
        spans = page.js("Array.from(document.querySelectorAll('#generated span.token'))"
                        ".map(s => [s.className, s.textContent])")
        sample = self.server.post("/v1/generate", {"prompt": prompt, "max_tokens": tokens, "seed": seed})
        boundary = (self.info["tokenizer"]["eos_token"], self.info["tokenizer"]["bos_token"])
        sample = [t for t in sample["samples"][0]["tokens"] if t["token"] not in boundary]  # unk is shown
        self.assertEqual(len(spans), len(sample))
        for (classes, _), t in zip(spans, sample):
            names = classes.split()
            levels = [c for c in names if c in ("p1", "p2", "p3", "p4")]
            self.assertEqual(len(levels), 1, classes)
            p = t["prob"]
            self.assertEqual(levels[0], "p1" if p > 0.1 else "p2" if p > 0.01 else "p3" if p > 0.001 else "p4", t)
        return shown

    def finish(self, screenshot):
        page = self.page
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
            path = os.path.join(pyutil.SOURCE_DIR, "docs", screenshot)
            with open(path, "wb") as f:
                f.write(png)
            print(f"wrote {path}", file=sys.stderr)

    def drive(self, steps):
        try:
            steps()
        except cdp.CdpError as e:
            raise AssertionError(f"{e}\nchromium's stderr (end):\n{self.browser.stderr()}") from None

    # --- the three models --------------------------------------------------------------------------------
    def test_word_model(self):
        page = self.open("fairytales-word")

        def steps():
            self.check_model_line()
            # At load, the next words of the empty context (from the start token).
            page.wait_for("document.querySelectorAll('#suggestions button.suggestion').length > 0")
            self.assertEqual(self.labels(), self.predicted("")[:8])
            # After a space: the next words.
            self.assertEqual(self.suggestions("the old "), self.predicted("the old ")[:8])
            # A half-typed word: its completions (prefix), not the words after it.
            shown = self.suggestions("once upon a ti")
            self.assertEqual(shown, self.predicted("once upon a ", "ti")[:8])
            self.assertTrue(all(w.startswith("ti") for w in shown), shown)
            self.assertIn("time", shown)
            self.assertEqual(self.click_suggestion("time"), "once upon a time ")
            self.assertEqual(self.labels(), self.predicted("once upon a time ")[:8])
            # Seed 1 ends at eos, which is not shown (as the CLI); seed 6 runs 30 tokens (the screenshot's).
            sample = self.server.post("/v1/generate", {"prompt": "once upon a time", "max_tokens": 30, "seed": 1})
            self.assertEqual(sample["samples"][0]["tokens"][-1]["token"], "<eos>")
            self.check_generation("once upon a time", 30, 1)
            self.check_generation("once upon a time", 30, 6)
            self.finish("serving-page.png")

        self.drive(steps)

    def test_a_server_with_a_key(self):
        page = self.open("fairytales-word", "--api-key", "sesame")

        def steps():
            # Without the key the page says what the server answered; with it, the model and its suggestions.
            page.wait_for("document.getElementById('model').textContent.startsWith('model: ')")
            self.assertIn("Authorization", page.js("document.getElementById('model').textContent"))
            self.assertEqual(self.labels(), [])
            page.type_into("#key", "sesame")
            page.js("document.getElementById('key').dispatchEvent(new Event('change'))")
            self.check_model_line()
            page.wait_for("document.querySelectorAll('#suggestions button.suggestion').length > 0")
            self.assertEqual(self.suggestions("the old "), self.predicted("the old ")[:8])
            self.check_generation("once upon a time", 10, 6)
            self.assertEqual(page.exceptions(), [])

        self.drive(steps)

    def test_char_model(self):
        self.open("charrnn-space")

        def steps():
            self.check_model_line()
            self.assertEqual(self.labels(), [])  # nothing typed: nothing to complete
            # The first word: no start token to predict from, so its first letter is the context.
            shown = self.suggestions("onc")
            self.assertEqual(shown, ["o" + w for w in self.predicted("o", "nc")][:8])
            self.assertIn("once", shown)
            self.assertEqual(self.click_suggestion("once"), "once ")
            shown = self.suggestions("once upon a ti")
            self.assertEqual(shown, self.predicted("once upon a ", "ti")[:8])
            self.assertTrue(all(w.startswith("ti") and len(w) > 2 for w in shown), shown)  # words, not letters
            self.assertIn("time", shown)
            # The click puts the word in place of the typed letters, then a space: no space between letters.
            self.assertEqual(self.click_suggestion("time"), "once upon a time ")
            # At the boundary: the next words, each up to the next word boundary.
            shown = self.labels()
            want = [w[1:] for w in self.predicted("once upon a time", " ") if w[1:].strip()][:8]
            self.assertEqual(shown, want)
            self.assertTrue(all(" " not in w for w in shown) and max(len(w) for w in shown) > 1, shown)
            text = self.check_generation("once upon a time", 60, 1)
            self.assertNotIn(" t h ", text)  # the characters joined, not spaced
            self.finish("serving-page-char.png")

        self.drive(steps)

    def test_sentencepiece_model(self):
        page = self.open("docs-spm")

        def steps():
            self.check_model_line()
            page.wait_for("document.querySelectorAll('#suggestions button.suggestion').length > 0")
            # No completion of a half-typed word (a piece is no word): the next pieces after the whole text,
            # a word start shown without SentencePiece's U+2581, a continuation after an ellipsis.
            shown = self.suggestions("every example is")
            pieces = self.predicted("every example is")
            want = [p[1:] if p.startswith("\u2581") else "\u2026" + p for p in pieces]
            want = [w for w in want if w.strip() and w != "\u2026"][:8]
            self.assertEqual(shown, want)
            self.assertFalse([w for w in shown if "\u2581" in w], shown)
            first = next(p for p in pieces if p.strip("\u2581"))
            joined = "every example is" + (" " + first[1:] if first.startswith("\u2581") else first)
            self.assertEqual(self.click_suggestion(shown[0]), joined)
            text = self.check_generation("every example", 20, 1)
            self.assertNotIn("\u2581", text)
            self.finish("serving-page-spm.png")

        self.drive(steps)


if __name__ == "__main__":
    unittest.main()
