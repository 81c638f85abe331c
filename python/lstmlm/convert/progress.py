"""The converters' progress line on stderr, in the CLI's form (cli/progress.hpp): `\\rlstmlm-convert: STAGE` while the
source is read, then `\\rlstmlm-convert: P% of SIZE, ETA M:SS, N tensors written` while weights.safetensors is written;
at most five updates a second, ended with a line feed. --progress auto (the default) shows it only when stderr is
a terminal, as the CLI does; always and never force it."""
import sys
import time


def _size(b):
    for unit, scale in (("GB", 1e9), ("MB", 1e6)):
        if b >= scale:
            return f"{b / scale:.1f} {unit}"
    return f"{b / 1e3:.1f} kB"


class Progress:
    def __init__(self, name, mode="auto", stream=None):
        self.stream = stream or sys.stderr
        isatty = getattr(self.stream, "isatty", lambda: False)
        self.enabled = mode == "always" or (mode == "auto" and isatty())
        self.name, self.written, self.last, self.start = name, False, 0.0, time.monotonic()

    def _put(self, text, force=False):
        if not self.enabled:
            return
        now = time.monotonic()
        if self.written and not force and now - self.last < 0.2:
            return
        self.last = now
        self.stream.write(f"\r{self.name}: {text} ")
        self.stream.flush()
        self.written = True

    def stage(self, text):
        """What is being done now (reading the source, folding constants)."""
        self._put(text, force=True)

    def bytes(self, done, total, counts):
        """Share of `total` bytes done, the time left, and what is done."""
        share = min(1.0, done / total) if total else 1.0
        text = f"{100 * share:.1f}% of {_size(total)}"
        elapsed = time.monotonic() - self.start
        if 0 < share < 1 and elapsed >= 1:  # an estimate from the first moments would be noise
            left = int(elapsed * (1 - share) / share + 0.5)
            text += f", ETA {left // 60}:{left % 60:02d}"
        self._put(f"{text}, {counts}", force=share >= 1)

    def finish(self):
        if self.written:
            self.stream.write("\n")
            self.stream.flush()
        self.written = False
