"""`lstmlm predict` and `score` answer each line as it arrives on a pipe held open (or a terminal), as
KenLM's query does, instead of waiting for a block of 4,096 lines or the end of the input; the answers are
the ones the same lines give from a file. On a terminal that is both the input and stderr, no progress line
(`\\rpredict: 1 contexts`, rewritten in place) mixes with what the user types."""
import os
import pty
import select
import subprocess
import time
import unittest

import pyutil

MODEL = os.path.join(pyutil.SOURCE_DIR, "models", "fairytales-word")


def read_line(proc, seconds=60):
    """One line of the child's stdout, or fail after `seconds` (the child would be waiting for more input)."""
    ready, _, _ = select.select([proc.stdout], [], [], seconds)
    if not ready:
        proc.kill()
        raise AssertionError("no answer while the input was held open")
    return proc.stdout.readline()


class InteractiveStdin(unittest.TestCase):
    def run_held_open(self, args, lines):
        if not pyutil.CLI:
            raise unittest.SkipTest("LSTMLM_CLI not set (run through ctest)")
        proc = subprocess.Popen([pyutil.CLI, *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, text=True, bufsize=1)
        answers = []
        try:
            for line in lines:
                proc.stdin.write(line + "\n")
                proc.stdin.flush()
                answers.append(read_line(proc))
            proc.stdin.close()
            rest = proc.stdout.read()
            self.assertEqual(proc.wait(timeout=60), 0)
        finally:
            if proc.poll() is None:
                proc.kill()
            proc.stdout.close()
        want = subprocess.run([pyutil.CLI, *args], input="".join(l + "\n" for l in lines), capture_output=True,
                              text=True, timeout=60).stdout
        self.assertEqual("".join(answers) + rest, want)
        return answers

    def test_predict_answers_each_line(self):
        answers = self.run_held_open(["predict", "-m", MODEL, "--output-format", "jsonl", "--top", "3"],
                                     ["the old", "once upon a"])
        self.assertIn('"context": "the old"', answers[0])
        self.assertIn('"context": "once upon a"', answers[1])

    def test_score_answers_each_line(self):
        answers = self.run_held_open(["score", "-m", MODEL, "--output-format", "jsonl", "-v", "word"],
                                     ["the old man", "the king"])
        self.assertIn('"line": 1', answers[0])
        self.assertIn('"line": 2', answers[1])


class Terminal(unittest.TestCase):
    def test_no_progress_line_when_typing_on_the_terminal(self):
        if not pyutil.CLI:
            raise unittest.SkipTest("LSTMLM_CLI not set (run through ctest)")
        for args in (["predict", "-m", MODEL, "--top", "1"], ["score", "-m", MODEL, "-v", "sentence"]):
            master, slave = pty.openpty()
            # stdin and stderr on the terminal, stdout a pipe: as `lstmlm predict -m M | tee out` typed into.
            proc = subprocess.Popen([pyutil.CLI, *args], stdin=slave, stdout=subprocess.PIPE, stderr=slave)
            os.close(slave)
            seen = b""
            try:
                for line in (b"the old\n", b"once upon a\n"):
                    os.write(master, line)
                    ready, _, _ = select.select([proc.stdout], [], [], 60)
                    self.assertTrue(ready, "no answer to a typed line")
                    proc.stdout.readline()
                    time.sleep(0.3)  # past the progress line's 200 ms between updates
                os.write(master, b"\x04")  # end of input, as Ctrl-D
                proc.stdout.read()
                self.assertEqual(proc.wait(timeout=60), 0)
                while True:
                    ready, _, _ = select.select([master], [], [], 0.5)
                    if not ready:
                        break
                    try:
                        chunk = os.read(master, 4096)
                    except OSError:  # the terminal's other end is closed
                        break
                    if not chunk:
                        break
                    seen += chunk
            finally:
                if proc.poll() is None:
                    proc.kill()
                proc.stdout.close()
                os.close(master)
            self.assertNotIn(b"\r" + args[0].encode() + b":", seen, seen)
            self.assertNotIn(args[0].encode() + b": 1 ", seen, seen)
            self.assertNotIn(b"tokens/s", seen, seen)  # a speed would count the typing
            # What is on the terminal is what was typed (echoed) and nothing else.
            self.assertIn(b"once upon a", seen, seen)
            # A progress line is still written when asked for.
            r = subprocess.run([pyutil.CLI, *args, "--progress", "always"], input="the old\n", capture_output=True,
                               text=True, timeout=60)
            self.assertIn(args[0] + ": ", r.stderr)


if __name__ == "__main__":
    unittest.main()
