// The JavaScript API of the WebAssembly build against the native CLI (the reference): score's records,
// predict's, generate's seeded samples and a State's candidates, equal value for value, on the bundled
// models and the converted TF.js and ml5 models of ../shared/data.
'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const {lstmlm, runCli, jsonl, cliError, realModels} = require('./util.js');

// A text with what a reader meets: OOV words, an empty line, a CRLF line end, no final line end.
const TEXT = 'once upon a time there was a king\n\nthe princess and the zyxwv dragon\r\nthe philosopher is a man';

function models() {
  return {
    'fairytales-word': 'models/fairytales-word',
    'charrnn-space': 'models/charrnn-space',
    ...realModels(),
  };
}

for (const [name, dir] of Object.entries(models())) {
  test(`${name}: score gives the CLI's records`, async () => {
    const m = await lstmlm().load(dir);
    try {
      const want = runCli(['score', '-m', dir, '-v', 'word', '--output-format', 'jsonl'], TEXT);
      assert.equal(want.status, 0, want.err);
      assert.deepEqual(m.score(TEXT), jsonl(want.out));
    } finally {
      m.free();
    }
  });

  test(`${name}: predict gives the CLI's record, with and without a prefix`, async () => {
    const m = await lstmlm().load(dir);
    try {
      for (const [context, options] of [['once upon a', {top: 5}], ['the king', {top: 0}],
        ['the philosopher is', {top: 3, prefix: 'a'}], ['', {top: 4}]]) {
        const args = ['predict', '-m', dir, '--top', String(options.top), '--output-format', 'jsonl'];
        if (options.prefix !== undefined) args.push('--prefix', options.prefix);
        const want = runCli([...args, context]);
        if (want.status !== 0) {
          // The same error, in the CLI's words.
          assert.throws(() => m.predict(context, options), {message: cliError([...args, context]).message});
          continue;
        }
        assert.deepEqual(m.predict(context, options), jsonl(want.out)[0], context);
      }
    } finally {
      m.free();
    }
  });

  test(`${name}: generate gives the CLI's seeded sample`, async () => {
    const m = await lstmlm().load(dir);
    try {
      for (const [prompt, o] of [['the king', {n: 30, seed: 42}],
        ['once upon', {n: 25, seed: 7, temperature: 0.7, top_k: 20, top_p: 0.9}], ['', {n: 12, temperature: 0}]]) {
        const args = ['generate', '-m', dir, '-p', prompt, '-n', String(o.n), '--seed', String(o.seed || 0),
          '--output-format', 'jsonl'];
        if (o.temperature !== undefined) args.push('--temperature', String(o.temperature));
        if (o.top_k !== undefined) args.push('--top-k', String(o.top_k));
        if (o.top_p !== undefined) args.push('--top-p', String(o.top_p));
        const want = runCli(args);
        if (want.status !== 0) {
          // An empty prompt on a model without bos or eos: the same error.
          assert.throws(() => m.generate(prompt, o), {message: cliError(args).message});
          continue;
        }
        assert.deepEqual(m.generate(prompt, o), jsonl(want.out)[0], prompt);
      }
    } finally {
      m.free();
    }
  });
}

// A State stepped a token at a time ranks what `predict` (stateful) ranks after the same context.
test('a State advanced token by token gives predict\'s candidates', async () => {
  for (const dir of ['models/fairytales-word', 'models/charrnn-space']) {
    const m = await lstmlm().load(dir);
    const s = m.state();
    try {
      const context = 'the king and the';
      for (const id of m.tokenize(context)) s.advance([id]);
      const want = jsonl(runCli(['predict', '-m', dir, '--top', '5', '--output-format', 'jsonl', context]).out)[0];
      const got = s.top(5);
      assert.deepEqual(got.map((c) => c.id), want.top.map((c) => c.id));
      for (let i = 0; i < got.length; i++) {
        assert.equal(Math.fround(got[i].logprob), Math.fround(want.top[i].logprob));
        assert.equal(got[i].token, want.top[i].token);
      }
      // A clone goes on alone; the original is unchanged.
      const c = s.clone();
      c.advance('king');
      assert.deepEqual(s.top(5).map((x) => x.id), got.map((x) => x.id));
      assert.notDeepEqual(c.top(5).map((x) => x.logprob), got.map((x) => x.logprob));
      c.free();
    } finally {
      s.free();
      m.free();
    }
  }
});

test('a word model completes a half-typed word as predict --prefix', async () => {
  const dir = 'models/fairytales-word';
  const m = await lstmlm().load(dir);
  try {
    const s = m.state().advance('once upon a');
    const want = jsonl(runCli(['predict', '-m', dir, '--top', '3', '--prefix', 'ti', '--output-format', 'jsonl',
      'once upon a']).out)[0];
    assert.deepEqual(s.complete('ti', 3).map((c) => c.token), want.top.map((c) => c.token));
    s.free();
  } finally {
    m.free();
  }
});

test('bad input is a JS exception with the CLI\'s message, and the module goes on', async () => {
  const dir = 'models/fairytales-word';
  const m = await lstmlm().load(dir);
  try {
    // Invalid UTF-8 on line 2 (bytes given as a Uint8Array: a JS string is always valid).
    const bad = Buffer.concat([Buffer.from('once upon\nsurrogate '), Buffer.from([0xed, 0xa0, 0x80]), Buffer.from('\n')]);
    const want = cliError(['score', '-m', dir, '-v', 'word', '--output-format', 'jsonl'], bad);
    assert.equal(want.status, 1);
    assert.throws(() => m.score(new Uint8Array(bad)), {name: 'LstmlmError', message: want.message,
      status: 'LSTMLM_ERR_INPUT', exitCode: 1});
    assert.throws(() => m.predict('x', {top: -1}), {status: 'LSTMLM_ERR_USAGE', exitCode: 2, message: /^top /});
    assert.throws(() => m.generate('x', {temperature: -1}), {status: 'LSTMLM_ERR_USAGE', message: /^temperature /});
    assert.throws(() => m.generate('x', {temprature: 1}), {message: /unknown option "temprature"/});
    assert.throws(() => m.state().advance([1e6]), {status: 'LSTMLM_ERR_INPUT'});
    assert.equal(m.score('once upon a time').length, 2);  // still running
  } finally {
    m.free();
  }
  assert.throws(() => m.score('x'), {message: 'model: used after free()'});
});

test('the files of a model as ArrayBuffers load as a browser gives them', async () => {
  const fs = require('node:fs');
  const dir = 'models/fairytales-word';
  const files = {};
  for (const f of ['config.json', 'vocab.json', 'weights.safetensors']) {
    const b = fs.readFileSync(`${dir}/${f}`);
    files[f] = b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength);
  }
  const m = await lstmlm().load(files, {name: 'fairytales'});
  try {
    const want = jsonl(runCli(['predict', '-m', dir, '--top', '3', '--output-format', 'jsonl', 'the king']).out)[0];
    assert.deepEqual(m.predict('the king', {top: 3}), want);
    assert.match(m.kernels, /^fp32\//);
  } finally {
    m.free();
  }
  delete files['vocab.json'];
  await assert.rejects(lstmlm().load(files, {name: 'broken'}), {status: 'LSTMLM_ERR_MODEL', message: /^\/models\/broken/});
});

test('a SentencePiece model is refused with a message, as the build has no SentencePiece', async () => {
  await assert.rejects(lstmlm().load('models/docs-spm'), {status: 'LSTMLM_ERR_MODEL',
    message: 'models/docs-spm/config.json: tokenizer.type "sentencepiece" needs the SentencePiece library, ' +
      'which this build (WebAssembly) does not have'});
});
