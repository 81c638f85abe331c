"""`lstmlm score --input-format jsonl --shard K/N --resume DIR`: the shards of a corpus together are the whole
output, byte for byte; a run killed with SIGKILL at random points and launched again until it finishes writes
exactly what an uninterrupted run writes, and never redoes a block an earlier launch finished; a bad document
in a later shard is named by its line in the file."""
import json
import os
import random
import signal
import subprocess
import time
import unittest

import pyutil

MODEL = os.path.join(pyutil.SOURCE_DIR, "models", "fairytales-word")
WORDS = ("once upon a time there was a king queen the old man went to mountains princess beautiful and they "
         "lived happily ever after zzqx").split()


def corpus(path, n, seed, bad=()):
    rng = random.Random(seed)
    with open(path, "w", encoding="utf-8") as f:
        for i in range(n):
            if i in bad:
                f.write('{"id": %d, "text": 7}\n' % i)  # the text field not a string: a bad document
                continue
            text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(0, 14)))
            f.write(json.dumps({"id": i, "text": text}) + "\n")


def score(*args, stdout=subprocess.PIPE):
    return subprocess.run([pyutil.CLI, "score", "-m", MODEL, "--input-format", "jsonl", "--threads", "1",
                           "--progress", "never", *args], stdout=stdout, stderr=subprocess.PIPE)


class ShardResume(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not pyutil.CLI:
            raise unittest.SkipTest("LSTMLM_CLI is not set")
        cls.dir = pyutil.temp_root("lstmlm_resume_")
        cls.a = os.path.join(cls.dir, "a.jsonl")
        cls.b = os.path.join(cls.dir, "b.jsonl")
        # Under the sanitizers (15-30x slower) a tenth of the corpus: still 3+ blocks of 1024 per file.
        n = 3000 if os.environ.get("LSTMLM_SANITIZED") else 30000
        corpus(cls.a, n, 1, bad={123, n * 2 // 3 + 1})
        corpus(cls.b, n // 10, 2)
        cls.bad_line = n * 2 // 3 + 2

    def test_shards_together_are_the_whole_output(self):
        full = score("--on-error", "skip", self.a, self.b)
        self.assertEqual(full.returncode, 0, full.stderr)
        parts = []
        for k in range(1, 6):
            r = score("--on-error", "skip", "--shard", f"{k}/5", self.a, self.b)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertGreater(len(r.stdout), 0)
            parts.append(r.stdout)
        self.assertEqual(b"".join(parts), full.stdout)

    def test_a_bad_document_in_a_later_shard_is_named_by_its_line_in_the_file(self):
        # The second bad document (two thirds in) lies in the second of two shards of a.jsonl.
        r = score("--shard", "2/2", self.a)
        self.assertEqual(r.returncode, 1)
        self.assertIn(f"{self.a}:{self.bad_line}: ".encode(), r.stderr)

    def test_stdin_and_bad_shards_are_refused_before_the_model_loads(self):
        jsonl = ["--input-format", "jsonl"]
        for args, want in (([*jsonl, "--shard", "1/2", "-"], b"stdin"), ([*jsonl, "--shard", "3/2", self.a], b"K/N"),
                           ([*jsonl, "--shard", "1/2"], b"stdin"), ([*jsonl, "--shard", "1/2", "/dev/null"], b"regular"),
                           (["--resume", "x"], b"only with --input-format jsonl")):
            r = subprocess.run([pyutil.CLI, "score", "-m", MODEL, *args], input=b"", capture_output=True)
            self.assertEqual(r.returncode, 2, (args, r.stderr))
            self.assertEqual(r.stderr.count(b"\n"), 1, r.stderr)
            self.assertIn(want, r.stderr)

    def test_killed_runs_resume_to_the_uninterrupted_output(self):
        args = ["--on-error", "skip", self.a, self.b]
        t0 = time.monotonic()
        ref = score(*args)
        took = time.monotonic() - t0
        self.assertEqual(ref.returncode, 0, ref.stderr)
        rdir = os.path.join(self.dir, "resume")
        out = os.path.join(self.dir, "out.jsonl")
        rng = random.Random(5)
        markers = {}  # block marker -> inode when first seen: a finished block is never written again
        kills = 0
        for _ in range(10):
            with open(out, "wb") as f:
                p = subprocess.Popen([pyutil.CLI, "score", "-m", MODEL, "--input-format", "jsonl", "--threads", "1",
                                      "--progress", "never", "--resume", rdir, *args], stdout=f,
                                     stderr=subprocess.DEVNULL)
                time.sleep(rng.uniform(0.05, 1.0) * took)
                p.send_signal(signal.SIGKILL)
                kills += p.wait() == -signal.SIGKILL
            for name in os.listdir(rdir):
                if name.endswith(".done"):
                    ino = os.stat(os.path.join(rdir, name)).st_ino
                    self.assertEqual(markers.setdefault(name, ino), ino, f"{name} was written again")
        self.assertGreater(kills, 0)
        with open(out, "wb") as f:
            last = subprocess.run([pyutil.CLI, "score", "-m", MODEL, "--input-format", "jsonl", "--threads", "1",
                                   "--progress", "never", "--resume", rdir, *args], stdout=f,
                                  stderr=subprocess.PIPE)
        self.assertEqual(last.returncode, 0, last.stderr)
        with open(out, "rb") as f:
            self.assertEqual(f.read(), ref.stdout)
        # The summary and the skipped document's warnings are those of the uninterrupted run.
        summary = lambda err: [l.split(b"; ")[:2] for l in err.splitlines() if b"documents," in l]
        self.assertEqual(summary(last.stderr), summary(ref.stderr))
        warnings = lambda err: [l for l in err.splitlines() if b"warning" in l]
        self.assertEqual(warnings(last.stderr), warnings(ref.stderr))
        self.assertEqual(len(warnings(ref.stderr)), 2)
        if markers:
            self.assertIn(b"not scored again", last.stderr)

    def test_a_damaged_marker_is_named_not_trusted(self):
        rdir = os.path.join(self.dir, "damaged")
        self.assertEqual(score("--resume", rdir, self.b).returncode, 0)
        marker = sorted(n for n in os.listdir(rdir) if n.endswith(".done"))[0]
        for text in (b"not json", b'{"documents": 1}', b'{"kept": "x"}'):
            with open(os.path.join(rdir, marker), "wb") as f:
                f.write(text)
            r = score("--resume", rdir, self.b)
            self.assertEqual(r.returncode, 1, r.stderr)
            self.assertIn(marker.encode(), r.stderr)
            self.assertEqual(r.stderr.count(b"\n"), 1, r.stderr)
            self.assertEqual(r.stdout, b"")

    def test_a_directory_of_another_run_is_refused(self):
        rdir = os.path.join(self.dir, "other")
        self.assertEqual(score("--resume", rdir, "--shard", "1/3", self.b).returncode, 0)
        r = score("--resume", rdir, "--shard", "2/3", self.b)
        self.assertEqual(r.returncode, 2)
        self.assertIn(b"holds a run with another 'shard'", r.stderr)


if __name__ == "__main__":
    unittest.main()
