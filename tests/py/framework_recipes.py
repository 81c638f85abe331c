"""The frameworks' own recipes, in float64 numpy: what a Keras app, PyTorch's word_language_model and TF1's
char-rnn compute when they evaluate a text, predict the next token or generate greedily. Written from the
frameworks' documented code (cited per function), not from lstmlm; the cells come from ref_numpy /
tf1_reference (float64, reading the source files).

- Keras apps (pad_sequences + model.predict / model.evaluate): every call starts from the zero state and
  reads exactly `maxlen` ids, the context pre-padded with 0 / pre-truncated
  (keras.utils.pad_sequences(padding="pre", truncating="pre")). The state after m padding ids is the same
  for every context, so it is computed once per m (`KerasPadded`).
- word_language_model (pytorch/examples main.py): `batchify(data, bsz)` cuts the token stream into bsz
  columns (dropping the tail that does not fill a row); `evaluate()` walks them in bptt windows with the
  hidden state carried across windows (repackaged, not reset), loss = mean cross-entropy of every target.
  generate.py: zero hidden, an input word, then `output, hidden = model(input, hidden)`, pick, feed the
  pick back.
- char-rnn-tensorflow (sherjilozair, utils.TextLoader + train.py): the file's characters as ids;
  num_batches = len // (batch_size * seq_length); xdata = ids[:num_batches * batch_size * seq_length],
  ydata = xdata shifted by one with ydata[-1] = xdata[0]; both reshaped to batch_size rows and split along
  the row into seq_length windows; the state is carried from window to window within an epoch (train.py
  feeds the last state back), from the zero state at the start. Loss (model.py): sequence_loss_by_example
  summed / batch_size / seq_length, i.e. the mean cross-entropy of every target. model.sample: zero state,
  feed prime[:-1], then feed the last char, pick (sampling_type 0 = argmax: `np.argmax(p)`), feed the pick.
"""
import numpy as np

import ref_numpy

KERAS_FILTERS = '!"#$%&()*+,-./:;<=>?@[\\]^_`{|}~\t\n'


def keras_text_to_word_sequence(text, filters=KERAS_FILTERS, lower=True, split=" "):
    """keras.preprocessing.text.text_to_word_sequence."""
    if lower:
        text = text.lower()
    text = text.translate(str.maketrans({c: split for c in filters}))
    return [w for w in text.split(split) if w]


def keras_texts_to_sequences(text, word_index, oov_id=None):
    """Tokenizer.texts_to_sequences for one text: unknown words dropped (or oov_id when it has an oov_token)."""
    out = []
    for w in keras_text_to_word_sequence(text):
        if w in word_index:
            out.append(word_index[w])
        elif oov_id is not None:
            out.append(oov_id)
    return out


def pad_sequences_pre(seq, maxlen, value=0):
    """keras.utils.pad_sequences([seq], maxlen, padding='pre', truncating='pre')[0]."""
    seq = list(seq)[-maxlen:]
    return [value] * (maxlen - len(seq)) + seq


# --------------------------------------------------------------------------------------------------- Keras
class KerasPadded:
    """A ref_numpy.KerasLM driven the way a Keras app drives it: every call from the zero state over exactly
    maxlen ids, pre-padded with 0. The state after m padding ids is cached for every m <= maxlen."""

    def __init__(self, lm, maxlen):
        self.lm, self.maxlen = lm, maxlen
        state = self.zero_state()
        self.pad_states = [state]
        for _ in range(maxlen):
            state = self.step(state, 0)
            self.pad_states.append(state)

    def zero_state(self):
        return [(np.zeros(l["recurrent_kernel"].shape[0]), np.zeros(l["recurrent_kernel"].shape[0]))
                for l in self.lm.lstms]

    def step(self, state, t):
        lm = self.lm
        if lm.emb is not None:
            x = lm.emb[t]
        else:
            x = np.zeros(lm.V)
            x[t] = 1.0
        new = []
        for l, (h, c) in zip(lm.lstms, state):
            H = h.shape[0]
            z = x @ l["kernel"] + h @ l["recurrent_kernel"] + l["bias"]
            ra, a = ref_numpy.ACTIVATIONS[l["recurrent_activation"]], ref_numpy.ACTIVATIONS[l["activation"]]
            i, f, g, o = ra(z[:H]), ra(z[H:2 * H]), a(z[2 * H:3 * H]), ra(z[3 * H:])
            c = f * c + i * g
            h = o * a(c)
            new.append((h, c))
            x = h
        return new

    def logprobs(self, state):
        return ref_numpy.log_softmax(state[-1][0] @ self.lm.wk + self.lm.wb)

    def predict(self, context):
        """ln p(next) = log of model.predict(pad_sequences([context], maxlen))[0]."""
        ids = list(context)[-self.maxlen:]
        state = self.pad_states[self.maxlen - len(ids)]
        for t in ids:
            state = self.step(state, t)
        return self.logprobs(state)

    def greedy(self, context, n):
        """The app's generate loop at temperature 0: pad, predict, argmax, append, repeat. (ids, ln p)."""
        ctx, ids, lps = list(context), [], []
        for _ in range(n):
            lp = self.predict(ctx)
            t = int(np.argmax(lp))
            ids.append(t)
            lps.append(float(lp[t]))
            ctx.append(t)
        return ids, lps

    def training_losses(self, seq):
        """The app's training set for one text: the n-gram prefixes seq[:k+1] (k >= 1), pre-padded to
        maxlen + 1, X = all but the last id, y = the last; returns -ln p(y | X) per sample, whose mean is
        model.evaluate's categorical cross-entropy."""
        return np.array([-self.predict(seq[:k])[seq[k]] for k in range(1, len(seq))])


# --------------------------------------------------------------------------------------------- PyTorch
def batchify(ids, bsz):
    """word_language_model main.py batchify: [nbatch, bsz], column j = ids[j*nbatch:(j+1)*nbatch]."""
    nbatch = len(ids) // bsz
    return np.asarray(ids[:nbatch * bsz]).reshape(bsz, nbatch).T


def torch_lm_batch_step(ref, state, tokens):
    """One time step of ref_numpy.TorchLM's cells on a batch of tokens; state = [(h [B,H], c [B,H])]."""
    x = ref.emb[tokens] if ref.emb is not None else np.eye(ref.V)[tokens]
    new = []
    for l, (h, c) in zip(ref.layers, state):
        z = x @ l["weight_ih"].T + h @ l["weight_hh"].T
        for b in (l["bias_ih"], l["bias_hh"]):
            if b is not None:
                z = z + b
        H = c.shape[1]
        i, f = ref_numpy.sigmoid(z[:, :H]), ref_numpy.sigmoid(z[:, H:2 * H])
        g, o = np.tanh(z[:, 2 * H:3 * H]), ref_numpy.sigmoid(z[:, 3 * H:])
        c = f * c + i * g
        h = o * np.tanh(c)
        if l["weight_hr"] is not None:
            h = h @ l["weight_hr"].T
        new.append((h, c))
        x = h
    logits = x @ ref.dec_w.T + ref.dec_b
    m = logits.max(1, keepdims=True)
    return new, logits - m - np.log(np.exp(logits - m).sum(1, keepdims=True))


def wlm_evaluate(ref, ids, eval_batch_size=10, bptt=35):
    """word_language_model's evaluate(batchify(ids, eval_batch_size)): returns (per-target -ln p as
    [nbatch - 1, bsz], the columns). The windows of bptt do not change the numbers (state carried)."""
    data = batchify(ids, eval_batch_size)
    B = data.shape[1]
    state = [(np.zeros((B, l["weight_hh"].shape[1])), np.zeros((B, l["weight_hh"].shape[0] // 4)))
             for l in ref.layers]
    nll = np.zeros((data.shape[0] - 1, B))
    for i in range(0, data.shape[0] - 1, bptt):
        for t in range(i, min(i + bptt, data.shape[0] - 1)):
            state, lp = torch_lm_batch_step(ref, state, data[t])
            nll[t] = -lp[np.arange(B), data[t + 1]]
    return nll, data


def torch_greedy(ref, context, n):
    """Greedy continuation of a TorchLM: feed context from the zero state, argmax, feed back. (ids, ln p)."""
    outs, state = ref.run(context)
    lp, ids, lps = outs[-1], [], []
    for _ in range(n):
        t = int(np.argmax(lp))
        ids.append(t)
        lps.append(float(lp[t]))
        outs, state = ref.run([t], state)
        lp = outs[-1]
    return ids, lps


# ------------------------------------------------------------------------------------------ TF1 char-rnn
def charrnn_batches(ids, batch_size, seq_length):
    """utils.TextLoader.create_batches: (xdata, ydata) as [batch_size, num_batches * seq_length] rows."""
    num_batches = len(ids) // (batch_size * seq_length)
    if num_batches == 0:
        raise ValueError("not enough data: make seq_length and batch_size small")
    xdata = np.asarray(ids[:num_batches * batch_size * seq_length])
    ydata = np.copy(xdata)
    ydata[:-1] = xdata[1:]
    ydata[-1] = xdata[0]
    return xdata.reshape(batch_size, -1), ydata.reshape(batch_size, -1)


def tf1_batch_logprobs(ref, xrows):
    """ln p over the vocabulary after every position of every row, state carried along the row from the
    zero state (TF1 cells of tf1_reference.TF1CharRNN, batched): [rows, T, V]."""
    B, T = xrows.shape
    c = [np.zeros((B, cell["kernel"].shape[1] // 4)) for cell in ref.cells]
    h = [np.zeros((B, cell["proj"].shape[1] if "proj" in cell else cell["kernel"].shape[1] // 4))
         for cell in ref.cells]
    out = np.zeros((B, T, ref.softmax_w.shape[1]))
    for t in range(T):
        x = ref.embedding[xrows[:, t]]
        for k, cell in enumerate(ref.cells):
            z = np.concatenate([x, h[k]], 1) @ cell["kernel"] + cell["bias"]
            i, j, f, o = np.split(z, 4, axis=1)
            c[k] = ref_numpy.sigmoid(f + ref.forget_bias) * c[k] + ref_numpy.sigmoid(i) * np.tanh(j)
            if ref.cell_clip is not None:
                c[k] = np.clip(c[k], -ref.cell_clip, ref.cell_clip)
            m = ref_numpy.sigmoid(o) * np.tanh(c[k])
            if "proj" in cell:
                m = m @ cell["proj"]
            h[k] = m
            x = m
        logits = x @ ref.softmax_w + ref.softmax_b
        mx = logits.max(1, keepdims=True)
        out[:, t] = logits - mx - np.log(np.exp(logits - mx).sum(1, keepdims=True))
    return out


def charrnn_train_loss(ref, ids, batch_size, seq_length):
    """train.py's loss over one epoch of TextLoader batches, state carried: (per-target -ln p as
    [batch_size, num_batches * seq_length], xdata rows, ydata rows)."""
    x, y = charrnn_batches(ids, batch_size, seq_length)
    lp = tf1_batch_logprobs(ref, x)
    nll = -np.take_along_axis(lp, y[:, :, None], 2)[:, :, 0]
    return nll, x, y


def charrnn_sample_greedy(ref, prime_ids, n):
    """model.sample(sampling_type=0) on a TF1CharRNN: (ids, ln p) of the n picks after the prime."""
    ctx, ids, lps = list(prime_ids), [], []
    for _ in range(n):
        lp = ref.next_logprobs(ctx)[-1]  # the state after the whole prime and the picks so far
        t = int(np.argmax(lp))
        ids.append(t)
        lps.append(float(lp[t]))
        ctx.append(t)
    return ids, lps
