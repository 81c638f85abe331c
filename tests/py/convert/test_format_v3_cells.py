"""Format v3 models written with lstmlm.format (every cell and option: GRU in both conventions with other
activations, simple RNN, LSTM with peepholes, cell and projection clips, stacks of mixed cells with a v2 head,
one-hot input, tied output) are read by lstmlm, and `lstmlm score` gives the float64 reference's per-token
log-probabilities (lstmlm_dir_ref, written from docs/model-format.md) within 1e-4."""
import copy
import os
import tempfile
import unittest

import numpy as np

import pyutil
import lstmlm.format as fmt
from lstmlm_dir_ref import DirModel
from convert.test_convert_torch_cells import check_cli_scores

TMP = pyutil.temp_root("lstmlm_v3_cells_")
V = 9


def random_model(layers, E=5, head=(), tied=False, seed=0, scale=0.9):
    """Writes a model of these layers with random weights; returns its directory."""
    rng = np.random.RandomState(seed)
    n = fmt.names
    t = {}
    if E:
        t[n.embedding] = rng.randn(V, E)
    in_size = E or V
    for k, l in enumerate(layers):
        cell = l.get("cell", "lstm")
        G, H = len(fmt.CELL_GATES[cell]), l["hidden_size"]
        out = l.get("proj_size") or H
        t[n.weight_ih(k, cell=cell)] = rng.randn(G * H, in_size) * scale
        t[n.weight_hh(k, cell=cell)] = rng.randn(G * H, out) * scale
        t[n.bias_ih(k, cell=cell)] = rng.randn(G * H) * 0.5
        if k % 2 == 0:
            t[n.bias_hh(k, cell=cell)] = rng.randn(G * H) * 0.5
        if l.get("proj_size"):
            t[n.weight_hr(k)] = rng.randn(out, H) * scale
        if l.get("peepholes"):
            for name in ("weight_ci", "weight_cf", "weight_co"):
                t[getattr(n, name)(k)] = rng.randn(H)
        in_size = out
    for k, d in enumerate(head):
        t[n.head_weight(k)] = rng.randn(d["units"], in_size) * 0.5
        t[n.head_bias(k)] = rng.randn(d["units"]) * 0.5
        in_size = d["units"]
    if not tied:
        t[n.decoder_weight] = rng.randn(V, in_size)
    t[n.decoder_bias] = rng.randn(V) * 0.5
    out = os.path.join(tempfile.mkdtemp(dir=TMP), "m")
    fmt.write_model(out, vocab=[f"w{i}" for i in range(V)], embedding_dim=E, layers=layers, tied=tied,
                    tokenizer=fmt.tokenizer(), tensors=t, source={"exporter": "test"}, head=list(head))
    return out


SEQUENCES = [[int(i) for i in np.random.RandomState(s).randint(0, V, size=14)] for s in range(4)]


class FormatV3CellsTest(unittest.TestCase):
    def check(self, out, version=3):
        self.assertEqual(pyutil.read_config(out)["format_version"], version)
        check_cli_scores(self, out, SEQUENCES)

    def test_gru_conventions_and_activations(self):
        pyutil.require_cli()
        for reset_after in (True, False):
            for ract, act in (("sigmoid", "tanh"), ("hard_sigmoid", "relu"), ("hard_sigmoid_keras3", "sigmoid"),
                              ("sigmoid", "linear")):
                with self.subTest(reset_after=reset_after, ract=ract, act=act):
                    layers = [fmt.gru_layer(6, reset_after, ract, act), fmt.gru_layer(4, not reset_after)]
                    self.check(random_model(layers, seed=len(ract) + reset_after, scale=0.5))

    def test_rnn(self):
        pyutil.require_cli()
        for act in ("tanh", "relu"):
            with self.subTest(activation=act):
                self.check(random_model([fmt.rnn_layer(7, act), fmt.rnn_layer(5, act)], scale=0.4))

    def test_lstm_peepholes_and_clips(self):
        pyutil.require_cli()
        cases = [
            fmt.layer(6, peepholes=True),
            fmt.layer(6, proj_size=4, cell_clip=0.6, proj_clip=0.4, peepholes=True),
            fmt.layer(6, proj_size=3, proj_clip=0.5),
            fmt.layer(6, cell_clip=0.5, peepholes=True, recurrent_activation="hard_sigmoid", activation="relu"),
        ]
        for l in cases:
            with self.subTest(layer=l):
                out = self.check_and_return(random_model([l, fmt.layer(5, peepholes=True)], scale=1.2))
                if l.get("cell_clip") or l.get("proj_clip"):
                    # The clips bind on these weights: without them the reference gives other numbers.
                    dm = DirModel(out)
                    free = copy.deepcopy(dm)
                    for layer in free.layers:
                        layer[1].pop("cell_clip", None)
                        layer[1].pop("proj_clip", None)
                    diff = max(np.abs(dm.token_logprobs(s) - free.token_logprobs(s)).max() for s in SEQUENCES)
                    self.assertGreater(diff, 1e-3)

    def check_and_return(self, out):
        self.check(out)
        return out

    def test_mixed_stack_head_one_hot_and_tied(self):
        pyutil.require_cli()
        layers = [fmt.rnn_layer(6, "relu"), fmt.gru_layer(7, reset_after=False),
                  fmt.layer(8, proj_size=5, peepholes=True), fmt.gru_layer(5)]
        self.check(random_model(layers, scale=0.5))
        self.check(random_model(layers, E=0, head=[fmt.dense(6, "relu")], seed=1, scale=0.5))
        self.check(random_model([fmt.gru_layer(5), fmt.rnn_layer(5)], E=5, tied=True, seed=2))

    def test_the_writers_latest_version_is_the_readers(self):
        out = random_model([fmt.gru_layer(3)])
        path = os.path.join(out, "config.json")
        with open(path, encoding="utf-8") as f:
            text = f.read()
        # A GRU model is version 3 (4 is the subword tokenizers', tests/py/convert/test_format_subword.py); a version past
        # the writer's latest is refused naming the latest the reader reads, which must be the writer's.
        self.assertIn(f'"format_version": {fmt.FORMAT_VERSION_V3},', text)
        newer = text.replace(f'"format_version": {fmt.FORMAT_VERSION_V3},',
                             f'"format_version": {fmt.LATEST_FORMAT_VERSION + 1},')
        with open(path, "w", encoding="utf-8") as f:
            f.write(newer)
        r = pyutil.run_lstmlm("info", "-m", out)
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn(f"newer than this build reads ({fmt.LATEST_FORMAT_VERSION})", r.stderr)


if __name__ == "__main__":
    unittest.main()
