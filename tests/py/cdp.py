"""A headless Chromium driven through the Chrome DevTools Protocol over --remote-debugging-pipe: JSON messages
ended by a NUL byte, commands written to the browser's fd 3, answers and events read from its fd 4. Only the
standard library; every wait is bounded."""
import fcntl
import json
import os
import select
import subprocess
import tempfile
import time

CHROMIUM = "/usr/bin/chromium"


class CdpError(AssertionError):
    pass


class Browser:
    """Chromium with a fresh profile in a temporary folder; close() ends it (SIGKILL after a timeout) and removes
    the folder."""

    def __init__(self, binary=CHROMIUM, width=900, height=700, timeout=30):
        self.timeout = timeout
        self.profile = tempfile.TemporaryDirectory(prefix="lstmlm-chromium-")
        self.log = open(os.path.join(self.profile.name, "stderr.log"), "w+b")
        to_browser_r, to_browser_w = os.pipe()
        from_browser_r, from_browser_w = os.pipe()
        # The browser sees the pipes as fds 3 and 4: moved to 10 and above here (so that neither redirection
        # clobbers the other), put in place by bash's redirections (dash reads one-digit fds only); no
        # preexec_fn, which is unsafe with threads.
        r = fcntl.fcntl(to_browser_r, fcntl.F_DUPFD_CLOEXEC, 10)
        w = fcntl.fcntl(from_browser_w, fcntl.F_DUPFD_CLOEXEC, 10)
        os.close(to_browser_r)
        os.close(from_browser_w)
        args = ["--headless=new", "--no-sandbox", "--disable-gpu", "--remote-debugging-pipe",
                f"--user-data-dir={self.profile.name}", f"--window-size={width},{height}", "--hide-scrollbars",
                "--no-first-run", "--no-default-browser-check", "--disable-extensions",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                "--disable-dev-shm-usage", "--mute-audio", "--password-store=basic", "about:blank"]
        try:
            self.proc = subprocess.Popen(
                ["/bin/bash", "-c", f'exec "$0" "$@" 3<&{r} 4>&{w} {r}<&- {w}>&-', binary, *args],
                pass_fds=(r, w), stdin=subprocess.DEVNULL, stdout=self.log, stderr=self.log)
        finally:
            os.close(r)
            os.close(w)
        self.out = to_browser_w
        self.inp = from_browser_r
        os.set_blocking(self.inp, False)
        self.buf = b""
        self.next_id = 0
        self.events = []  # (method, params, sessionId) not yet consumed, in arrival order

    def stderr(self):
        self.log.flush()
        self.log.seek(0)
        return self.log.read().decode("utf-8", "replace")[-4000:]

    def _read(self, deadline):
        """Waits until deadline for the next message; returns it, or None at the deadline."""
        while True:
            at = self.buf.find(b"\0")
            if at >= 0:
                msg, self.buf = self.buf[:at], self.buf[at + 1:]
                return json.loads(msg)
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            ready, _, _ = select.select([self.inp], [], [], min(left, 0.5))
            if ready:
                chunk = os.read(self.inp, 1 << 20)
                if not chunk:
                    raise CdpError(f"chromium closed its pipe (exit {self.proc.poll()}): {self.stderr()}")
                self.buf += chunk
            elif self.proc.poll() is not None:
                raise CdpError(f"chromium exited with {self.proc.returncode}: {self.stderr()}")

    def call(self, method, params=None, session=None, timeout=None):
        """Sends a command and returns its result; events arriving meanwhile are kept for wait_event."""
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        data = json.dumps(msg).encode() + b"\0"
        deadline = time.monotonic() + (timeout or self.timeout)
        while data:
            _, ready, _ = select.select([], [self.out], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                raise CdpError(f"{method}: chromium does not read its pipe")
            data = data[os.write(self.out, data):]
        while True:
            reply = self._read(deadline)
            if reply is None:
                raise CdpError(f"{method}: no answer in {timeout or self.timeout} s")
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise CdpError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            if "method" in reply:
                self.events.append((reply["method"], reply.get("params", {}), reply.get("sessionId")))

    def wait_event(self, method, timeout=None):
        """The params of the first event named method (kept or arriving within timeout), which is consumed."""
        deadline = time.monotonic() + (timeout or self.timeout)
        while True:
            for i, (m, params, _) in enumerate(self.events):
                if m == method:
                    del self.events[i]
                    return params
            msg = self._read(deadline)
            if msg is None:
                raise CdpError(f"no {method} event in {timeout or self.timeout} s")
            if "method" in msg:
                self.events.append((msg["method"], msg.get("params", {}), msg.get("sessionId")))

    def close(self):
        try:
            if self.proc.poll() is None:
                try:
                    self.call("Browser.close", timeout=5)
                except (CdpError, OSError):
                    pass
                try:
                    self.proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait(timeout=10)
        finally:
            os.close(self.out)
            os.close(self.inp)
            self.log.close()
            self.profile.cleanup()


class Page:
    """One tab, attached in flat mode: commands go to its session."""

    def __init__(self, browser, url="about:blank"):
        self.browser = browser
        target = browser.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = browser.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        self.call("Page.enable")
        self.call("Runtime.enable")
        if url != "about:blank":
            self.navigate(url)

    def call(self, method, params=None, timeout=None):
        return self.browser.call(method, params, session=self.session, timeout=timeout)

    def navigate(self, url, timeout=None):
        self.browser.events = [e for e in self.browser.events if e[0] != "Page.loadEventFired"]
        result = self.call("Page.navigate", {"url": url}, timeout=timeout)
        if result.get("errorText"):
            raise CdpError(f"navigate {url}: {result['errorText']}")
        self.browser.wait_event("Page.loadEventFired", timeout=timeout)

    def js(self, expression, timeout=None):
        """The value of a JavaScript expression (a promise is awaited); a thrown exception fails."""
        r = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": True},
                      timeout=timeout)
        if "exceptionDetails" in r:
            d = r["exceptionDetails"]
            raise CdpError(f"{expression!r}: {d.get('exception', {}).get('description') or d.get('text')}")
        return r["result"].get("value")

    def wait_for(self, expression, timeout=10, every=0.05):
        """Polls a JavaScript expression until it is truthy; returns its value, or fails after timeout s."""
        deadline = time.monotonic() + timeout
        while True:
            value = self.js(expression)
            if value:
                return value
            if time.monotonic() > deadline:
                raise CdpError(f"still false after {timeout} s: {expression}")
            time.sleep(every)

    def click(self, selector):
        """A real left click (mouse pressed and released) at the centre of the element."""
        box = self.js(f"(() => {{ const e = document.querySelector({json.dumps(selector)}); e.scrollIntoView(); "
                      "const r = e.getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; })()")
        for kind in ("mousePressed", "mouseReleased"):
            self.call("Input.dispatchMouseEvent",
                      {"type": kind, "x": box[0], "y": box[1], "button": "left", "clickCount": 1})

    def type_into(self, selector, text, replace=False):
        """Focuses the element and inserts text as an input method would: the input event fires. replace: over
        the element's whole value (selected first)."""
        self.js(f"(e => {{ e.focus(); if ({json.dumps(replace)}) e.select(); }})"
                f"(document.querySelector({json.dumps(selector)}))")
        self.call("Input.insertText", {"text": text})

    def press(self, key, code, key_code, text=""):
        """A key pressed and released in the focused element (e.g. "Enter", "Enter", 13, "\\r")."""
        for kind in ("keyDown", "keyUp"):
            params = {"type": kind, "key": key, "code": code, "windowsVirtualKeyCode": key_code}
            if kind == "keyDown" and text:
                params["text"] = text
            self.call("Input.dispatchKeyEvent", params)

    def exceptions(self):
        """The uncaught JavaScript exceptions reported so far."""
        return [p["exceptionDetails"] for m, p, s in self.browser.events
                if m == "Runtime.exceptionThrown" and s == self.session]
