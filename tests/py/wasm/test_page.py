"""The serverless page of the WebAssembly build (web/page/index.html, docs/web.md) in a headless Chromium driven
through the DevTools protocol (tests/py/cdp.py): the package folder and a copy of a bundled model served as static
files on 127.0.0.1 (a free port), the model run in the tab. Its suggestions are `lstmlm predict`'s candidates (the
special tokens left out), its completions `predict --prefix`'s, its generated text the CLI's for the same seed with
each token coloured by its probability. Run by scripts/test-wasm with LSTMLM_WASM_DIR (the package folder) and
LSTMLM_CLI; skipped without them or without chromium."""
import base64
import functools
import http.server
import json
import os
import shutil
import subprocess
import sys
import threading
import unittest

import cdp
import pyutil

WASM_DIR = os.environ.get("LSTMLM_WASM_DIR", "")


class Quiet(http.server.SimpleHTTPRequestHandler):
    extensions_map = {**http.server.SimpleHTTPRequestHandler.extensions_map, ".wasm": "application/wasm",
                      ".js": "text/javascript"}

    def log_message(self, *args):
        pass


class ThePageInABrowser(unittest.TestCase):
    def setUp(self):
        for path, why in ((cdp.CHROMIUM, "Debian's chromium"), (os.path.join(WASM_DIR, "lstmlm.wasm"),
                                                                "the WebAssembly build (LSTMLM_WASM_DIR)")):
            if not WASM_DIR or not os.path.exists(path):
                print(f"SKIP: {path or 'LSTMLM_WASM_DIR'} not present ({why})", file=sys.stderr)
                raise unittest.SkipTest(f"{path} not present")
        self.root = pyutil.temp_root("lstmlm-wasm-page-")
        for f in ("lstmlm.js", "lstmlm.wasm"):
            shutil.copy(os.path.join(WASM_DIR, f), self.root)
        shutil.copytree(os.path.join(WASM_DIR, "page"), os.path.join(self.root, "page"))
        self.model_dir = os.path.join(pyutil.SOURCE_DIR, "models", "fairytales-word")
        shutil.copytree(self.model_dir, os.path.join(self.root, "page", "model"))
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=self.root))
        thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        thread.start()
        self.addCleanup(self.server.server_close)
        self.addCleanup(thread.join, 10)
        self.addCleanup(self.server.shutdown)
        self.browser = cdp.Browser(width=900, height=700)
        self.addCleanup(self.browser.close)
        self.page = cdp.Page(self.browser, f"http://127.0.0.1:{self.server.server_address[1]}/page/")

    def cli(self, *args):
        r = subprocess.run([pyutil.require_cli(), *args], capture_output=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        return r.stdout.decode("utf-8")

    def predicted(self, context, prefix=""):
        args = ["predict", "-m", self.model_dir, "--top", "10", "--output-format", "jsonl"]
        if prefix:
            args += ["--prefix", prefix]
        top = json.loads(self.cli(*args, context).splitlines()[0])["top"]
        return [c["token"] for c in top if c["token"] not in ("<eos>", "<unk>")][:8]

    def labels(self):
        return self.page.js("Array.from(document.querySelectorAll('#suggestions button.suggestion'))"
                            ".map(b => b.firstChild.textContent.replace(/ $/, ''))")

    def suggestions(self, text):
        page = self.page
        page.js("document.querySelectorAll('#suggestions button').forEach(b => b.dataset.stale = '1')")
        page.type_into("#context", text, replace=True)
        page.wait_for("document.querySelectorAll('#suggestions button.suggestion:not([data-stale])').length > 0")
        return self.labels()

    def generation(self, prompt, tokens, seed):
        page = self.page
        page.type_into("#n", str(tokens), replace=True)
        page.type_into("#seed", str(seed), replace=True)
        page.type_into("#prompt", prompt, replace=True)
        page.press("Enter", "Enter", 13, "\r")
        page.wait_for("document.getElementById('generated').dataset.done === '1'", timeout=60)
        shown = page.js("document.getElementById('generated').textContent")
        self.assertEqual(shown, self.cli("generate", "-m", self.model_dir, "-p", prompt, "-n", str(tokens), "--seed",
                                         str(seed))[:-1])
        sample = json.loads(self.cli("generate", "-m", self.model_dir, "-p", prompt, "-n", str(tokens), "--seed",
                                     str(seed), "--output-format", "jsonl"))
        spans = page.js("Array.from(document.querySelectorAll('#generated span.token')).map(s => s.className)")
        probs = [t["prob"] for t in sample["tokens"] if t["token"] != "<eos>"]
        self.assertEqual(len(spans), len(probs))
        for classes, p in zip(spans, probs):
            self.assertIn("p1" if p > 0.1 else "p2" if p > 0.01 else "p3" if p > 0.001 else "p4", classes.split())

    def test_word_model_in_the_tab(self):
        page = self.page
        try:
            page.wait_for("document.getElementById('model').textContent.startsWith('model: vocabulary of 554')",
                          timeout=60)
            self.assertIn("fp32/simd128", page.js("document.getElementById('model').textContent"))
            page.wait_for("document.querySelectorAll('#suggestions button.suggestion').length > 0")
            self.assertEqual(self.labels(), self.predicted(""))
            self.assertEqual(self.suggestions("the old "), self.predicted("the old "))
            shown = self.suggestions("once upon a ti")
            self.assertEqual(shown, self.predicted("once upon a ", "ti"))
            self.assertIn("time", shown)
            self.generation("once upon a time", 30, 6)
            self.generation("the king", 12, 1)
            self.assertEqual(page.js("document.getElementById('error').textContent"), "")
            self.assertEqual(page.exceptions(), [])
            if os.environ.get("LSTMLM_UPDATE_SCREENSHOT") == "1":
                height = page.js("Math.ceil(document.documentElement.scrollHeight)")
                page.call("Emulation.setDeviceMetricsOverride",
                          {"width": 900, "height": height, "deviceScaleFactor": 1, "mobile": False})
                png = base64.b64decode(page.call("Page.captureScreenshot", {"format": "png"})["data"])
                with open(os.path.join(pyutil.SOURCE_DIR, "docs", "web-page.png"), "wb") as f:
                    f.write(png)
        except cdp.CdpError as e:
            raise AssertionError(f"{e}\nchromium's stderr (end):\n{self.browser.stderr()}") from None


if __name__ == "__main__":
    unittest.main()
