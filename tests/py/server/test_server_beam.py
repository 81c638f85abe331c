"""/v1/generate with beam search, biases and constraints: the hypotheses are the records `lstmlm generate
--beam-size --output-format jsonl` prints, byte for byte, alone or streamed (one event per hypothesis at the
end); bad fields are one-line 400s naming the field."""
import json
import os
import tempfile
import unittest

from server.test_server import MODEL, ServerTestBase, cli


class BeamOverHttp(ServerTestBase):
    def test_beam_is_the_cli_s(self):
        want = cli("generate", "-m", MODEL, "-p", "the king", "-n", "8", "--beam-size", "4", "--n-best", "3",
                   "--length-penalty", "0.5", "--no-repeat-ngram", "2", "--output-format", "jsonl").splitlines()
        self.assertEqual(len(want), 3)
        body = {"prompt": "the king", "max_tokens": 8, "beam_size": 4, "n_best": 3, "length_penalty": 0.5,
                "no_repeat_ngram": 2}
        self.assertEqual(self.ok("/v1/generate", body), '{"hypotheses": [' + ", ".join(want) + "]}")
        events = [e for e in self.ok("/v1/generate", dict(body, stream=True)).split("\n\n") if e]
        self.assertEqual([e.split("\n", 1)[1][len("data: "):] for e in events[:-1]], want)
        self.assertTrue(all(e.startswith("event: hypothesis\n") for e in events[:-1]))
        self.assertEqual(events[-1], "event: done\ndata: {}")

    def test_bias_and_constraints_are_the_cli_s(self):
        words = ["the", "king", "princess", "and", "said"]
        path = os.path.join(tempfile.mkdtemp(prefix="lstmlm_srv_beam_"), "words.txt")
        with open(path, "w") as f:
            f.write("\n".join(words) + "\n")
        want = cli("generate", "-m", MODEL, "-n", "6", "--beam-size", "3", "--n-best", "2", "--allowed-words", path,
                   "--logit-bias", "princess=2", "--regex", "the (king|princess).*", "--stop", "said",
                   "--output-format", "jsonl").splitlines()
        body = {"max_tokens": 6, "beam_size": 3, "n_best": 2, "allowed_words": words, "logit_bias": {"princess": 2},
                "regex": "the (king|princess).*", "stop": ["said"]}
        self.assertEqual(self.ok("/v1/generate", body), '{"hypotheses": [' + ", ".join(want) + "]}")
        # Sampling takes the same fields.
        want = cli("generate", "-m", MODEL, "-n", "6", "--seed", "3", "--num-samples", "2", "--allowed-words", path,
                   "--regex", "the (king|princess).*", "--output-format", "jsonl").splitlines()
        body = {"max_tokens": 6, "seed": 3, "num_samples": 2, "allowed_words": words, "regex": "the (king|princess).*"}
        self.assertEqual(self.ok("/v1/generate", body), '{"samples": [' + ", ".join(want) + "]}")
        for rec in want:
            self.assertRegex(json.loads(rec)["text"], r"^the (king|princess)")

    def test_bad_fields(self):
        bad = [({"beam_size": 0, "n_best": 2}, "n_best"), ({"beam_size": 1000000000}, "beam_size"),
               ({"beam_size": 2, "n_best": 3}, "n_best"), ({"beam_size": 2, "length_penalty": -1}, "length_penalty"),
               ({"logit_bias": {"the": 1000}}, "logit_bias"), ({"logit_bias": {"zzqx": 1}}, "logit_bias"),
               ({"logit_bias": [1]}, "logit_bias"), ({"logit_bias": {"the": "x"}}, "logit_bias"),
               ({"allowed_words": ["zzqx"]}, "allowed_words"), ({"regex": "(the"}, "regex"),
               ({"beam_size": 2, "num_samples": 2}, "num_samples")]
        for body, field in bad:
            with self.subTest(body=body):
                self.error(400, "/v1/generate", dict(body, max_tokens=4), field=field)


if __name__ == "__main__":
    unittest.main()
