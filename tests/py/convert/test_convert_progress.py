"""The converters' progress line (--progress auto|always|never, lstmlm/convert/progress.py): on a terminal
(a pty) or with always, stderr shows the source being read and the share of weights.safetensors written,
ended by a line feed before the summary; through a pipe (auto) or with never, stderr holds the summary alone,
as before. The model written is the same either way."""
import os
import pty
import subprocess
import sys
import unittest

import pyutil

TMP = pyutil.temp_root("lstmlm_convert_progress_")


class ConvertProgress(unittest.TestCase):
    def setUp(self):
        d = pyutil.data("keras3-shakespeare-char2")
        self.args = [os.path.join(d, "shakespeare.h5"), "--vocab", os.path.join(d, "char_to_idx.json")]

    def run_convert(self, out, *extra, stderr=subprocess.PIPE):
        return subprocess.run([sys.executable, os.path.join(pyutil.TOOLS, "convert.py"), *self.args,
                               os.path.join(TMP, out), *extra], stdout=subprocess.PIPE, stderr=stderr, timeout=300)

    def weights(self, out):
        with open(os.path.join(TMP, out, "weights.safetensors"), "rb") as f:
            return f.read()

    def test_always_never_and_a_pipe(self):
        shown = self.run_convert("always", "--progress", "always")
        self.assertEqual(shown.returncode, 0, shown.stderr)
        err = shown.stderr.decode()
        self.assertTrue(err.startswith("\rlstmlm-convert: reading "), err)
        self.assertIn("lstmlm-convert: 100.0% of 1.3 MB, 9 of 9 tensors written \n", err)
        self.assertTrue(err.endswith("\nwrote " + os.path.join(TMP, "always") + ": vocab 29, embedding 64, "
                                     "layers [150, 150], tied False, tokenizer char\n"), err)
        for mode in ("never", "auto"):
            quiet = self.run_convert(mode, "--progress", mode)
            self.assertEqual(quiet.returncode, 0)
            self.assertNotIn(b"\r", quiet.stderr)
            self.assertEqual(quiet.stderr.count(b"\n"), 1, quiet.stderr)
            self.assertEqual(self.weights(mode), self.weights("always"))

    def test_a_terminal_shows_it(self):
        leader, follower = pty.openpty()
        try:
            r = self.run_convert("tty", stderr=follower)
            os.close(follower)
            follower = -1
            seen = b""
            while True:
                try:
                    chunk = os.read(leader, 4096)
                except OSError:
                    break
                if not chunk:
                    break
                seen += chunk
        finally:
            if follower >= 0:
                os.close(follower)
            os.close(leader)
        self.assertEqual(r.returncode, 0)
        self.assertIn(b"\rlstmlm-convert: reading ", seen)
        self.assertIn(b"9 of 9 tensors written", seen)


if __name__ == "__main__":
    unittest.main()
