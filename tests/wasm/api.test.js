// The JavaScript API of the WebAssembly build against the native CLI (the reference): score's records,
// predict's, generate's seeded samples and a State's candidates, on the bundled models and the converted
// TF.js and ml5 models of ../shared/data: within 1e-5 on the default kernels (fp32/simd128, the WebAssembly
// bit set), value for value with {isa: 'scalar'} (the native bits); and the WebAssembly bits the same for a
// line alone and in a batch.
'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const {spawnSync} = require('node:child_process');
const {lstmlm, cli, runCli, jsonl, cliError, realModels, assertClose} = require('./util.js');

// A text with what a reader meets: OOV words, an empty line, a CRLF line end, no final line end.
const TEXT = 'once upon a time there was a king\n\nthe princess and the zyxwv dragon\r\nthe philosopher is a man';

function models() {
  return {
    'fairytales-word': 'models/fairytales-word',
    'charrnn-space': 'models/charrnn-space',
    ...realModels(),
  };
}

// The CLI's full distribution after a context (--top 0): [{token, id, logprob}], best first.
function distribution(dir, context, prefix) {
  const args = ['predict', '-m', dir, '--top', '0', '--output-format', 'jsonl'];
  if (prefix !== undefined) args.push('--prefix', prefix);
  return jsonl(runCli([...args, context]).out)[0].top;
}

// A prediction of the WebAssembly bit set against the CLI's record `want`: the same context and ids, the same
// number of candidates; the i-th candidate's log-probability within the tolerance of the CLI's i-th best, and of
// the CLI's own for that token (so near-ties may swap places, nothing else).
function assertPredictionClose(got, want, all, what) {
  const {top: gotTop, ...gotRest} = got;
  const {top: wantTop, ...wantRest} = want;
  assert.deepEqual(gotRest, wantRest, what);
  assert.equal(gotTop.length, wantTop.length, what);
  // By token: a char model's completions are words, each with the id of its first character, and one word
  // may end in two ways (a space, a line end): the nearest of its log-probabilities.
  const byToken = new Map();
  for (const c of all) byToken.set(c.token, [...(byToken.get(c.token) || []), c.logprob]);
  gotTop.forEach((c, i) => {
    assertClose(c.logprob, wantTop[i].logprob, `${what}: top[${i}].logprob`);
    const mine = byToken.get(c.token) || [];
    const nearest = mine.reduce((a, b) => Math.abs(b - c.logprob) < Math.abs(a - c.logprob) ? b : a, Infinity);
    assertClose(c.logprob, nearest, `${what}: top[${i}] (${c.token}) against the CLI's`);
    assertClose(c.prob, Math.exp(nearest), `${what}: top[${i}].prob`);
  });
}

for (const [name, dir] of Object.entries(models())) {
  test(`${name}: score gives the CLI's records (within 1e-5; bit for bit with isa scalar)`, async () => {
    const m = await lstmlm().load(dir);
    const s = await lstmlm().load(dir, {isa: 'scalar'});
    try {
      assert.equal(m.kernels, 'fp32/simd128');
      assert.equal(s.kernels, 'fp32/scalar');
      const want = runCli(['score', '-m', dir, '-v', 'word', '--output-format', 'jsonl'], TEXT);
      assert.equal(want.status, 0, want.err);
      assertClose(m.score(TEXT), jsonl(want.out));
      assert.deepEqual(s.score(TEXT), jsonl(want.out));
    } finally {
      m.free();
      s.free();
    }
  });

  test(`${name}: int8 gives the CLI's --precision int8 records, bit for bit`, async () => {
    const m = await lstmlm().load(dir, {precision: 'int8'});
    const s = await lstmlm().load(dir, {precision: 'int8', isa: 'scalar'});
    try {
      assert.equal(m.kernels, 'int8/simd128');
      assert.equal(s.kernels, 'int8/scalar');
      const want = runCli(['score', '-m', dir, '--precision', 'int8', '-v', 'word', '--output-format', 'jsonl'], TEXT);
      assert.equal(want.status, 0, want.err);
      assert.deepEqual(m.score(TEXT), jsonl(want.out));
      assert.deepEqual(s.score(TEXT), jsonl(want.out));
      const contexts = ['once upon a', 'the king', 'the philosopher is'];
      const predicted = runCli(['predict', '-m', dir, '--precision', 'int8', '--top', '5', '--output-format', 'jsonl'],
        contexts.join('\n') + '\n');
      assert.deepEqual(m.predict(contexts, {top: 5}), jsonl(predicted.out));
    } finally {
      m.free();
      s.free();
    }
  });

  test(`${name}: a line scored alone has the bits it has in a batch of lines`, async () => {
    const m = await lstmlm().load(dir);
    try {
      const lines = [...TEXT.split(/\r?\n/), 'the cat sat on the mat', 'and so it goes', 'once', 'a b c d e f g'];
      const batch = m.score(lines.join('\n'));
      assert.equal(batch.length, lines.length + 1);
      lines.forEach((line, i) => {
        if (line === '') return;  // alone, no line record: only the summary
        const alone = m.score(line)[0];
        assert.deepEqual({...alone, line: i + 1}, batch[i], line);
      });
    } finally {
      m.free();
    }
  });

  test(`${name}: predict gives the CLI's record, with and without a prefix`, async () => {
    const m = await lstmlm().load(dir);
    const s = await lstmlm().load(dir, {isa: 'scalar'});
    try {
      for (const [context, options] of [['once upon a', {top: 5}], ['the king', {top: 0}],
        ['the philosopher is', {top: 3, prefix: 'a'}], ['', {top: 4}]]) {
        const args = ['predict', '-m', dir, '--top', String(options.top), '--output-format', 'jsonl'];
        if (options.prefix !== undefined) args.push('--prefix', options.prefix);
        const want = runCli([...args, context]);
        if (want.status !== 0) {
          // The same error, in the CLI's words.
          const message = cliError([...args, context]).message;
          assert.throws(() => m.predict(context, options), {message});
          assert.throws(() => s.predict(context, options), {message});
          continue;
        }
        assertPredictionClose(m.predict(context, options), jsonl(want.out)[0],
          distribution(dir, context, options.prefix), context);
        assert.deepEqual(s.predict(context, options), jsonl(want.out)[0], context);
      }
    } finally {
      m.free();
      s.free();
    }
  });

  test(`${name}: predict of many contexts gives each one's own record, and the CLI's`, async () => {
    const m = await lstmlm().load(dir);
    const s = await lstmlm().load(dir, {isa: 'scalar'});
    try {
      // 70 contexts: a full engine batch of 64 and 6 more, lengths 0 to 9 words.
      const words = 'the king and the queen once upon a time there was'.split(' ');
      const contexts = Array.from({length: 70}, (_, i) => words.slice(i % 5, i % 5 + (i * 7) % 10).join(' '));
      const want = runCli(['predict', '-m', dir, '--top', '3', '--output-format', 'jsonl'], contexts.join('\n') + '\n');
      if (want.status !== 0) {
        // An empty context on a model without bos or eos: the CLI's error for that line.
        assert.throws(() => m.predict(contexts, {top: 3}), {message: cliError(['predict', '-m', dir, '--top', '3'],
          contexts.join('\n') + '\n').message});
        return;
      }
      const got = m.predict(contexts, {top: 3});
      assert.equal(got.length, contexts.length);
      contexts.forEach((c, i) => assert.deepEqual(got[i], m.predict(c, {top: 3}), c));
      assert.deepEqual(s.predict(contexts, {top: 3}), jsonl(want.out));
      assert.deepEqual(m.predict([], {top: 3}), []);
    } finally {
      m.free();
      s.free();
    }
  });

  test(`${name}: generate gives the CLI's seeded sample`, async () => {
    const m = await lstmlm().load(dir);
    const s = await lstmlm().load(dir, {isa: 'scalar'});
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
          const message = cliError(args).message;
          assert.throws(() => m.generate(prompt, o), {message});
          assert.throws(() => s.generate(prompt, o), {message});
          continue;
        }
        // The same text: a draw falls within 1e-5 of a boundary between two tokens' shares about once in
        // 10^5 draws.
        assertClose(m.generate(prompt, o), jsonl(want.out)[0], prompt);
        assert.deepEqual(s.generate(prompt, o), jsonl(want.out)[0], prompt);
      }
    } finally {
      m.free();
      s.free();
    }
  });
}

// A State stepped a token at a time (a batch of one per step) ranks what `predict` ranks after the same
// context, bit for bit: the module's predict with the WebAssembly bits, the CLI's with the native ones.
for (const isa of ['simd128', 'scalar']) test(`a State advanced token by token gives predict's candidates (${isa})`, async () => {
  for (const dir of ['models/fairytales-word', 'models/charrnn-space']) {
    const m = await lstmlm().load(dir, {isa});
    const s = m.state();
    try {
      const context = 'the king and the';
      for (const id of m.tokenize(context)) s.advance([id]);
      const want = isa === 'scalar' ?
        jsonl(runCli(['predict', '-m', dir, '--top', '5', '--output-format', 'jsonl', context]).out)[0] :
        m.predict(context, {top: 5});
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
  const m = await lstmlm().load(dir, {isa: 'scalar'});
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
  const byPath = await lstmlm().load(dir);
  try {
    assert.deepEqual(m.predict('the king', {top: 3}), byPath.predict('the king', {top: 3}));
    assert.equal(m.kernels, 'fp32/simd128');
  } finally {
    m.free();
    byPath.free();
  }
  delete files['vocab.json'];
  await assert.rejects(lstmlm().load(files, {name: 'broken'}), {status: 'LSTMLM_ERR_MODEL', message: /^\/models\/broken/});
});

test('isa is LSTMLM_ISA: an unknown level is the CLI\'s error', async () => {
  const dir = 'models/fairytales-word';
  const want = spawnSync(cli, ['score', '-m', dir], {input: 'x', encoding: 'utf8', env: {...process.env, LSTMLM_ISA: 'avx9'}});
  assert.equal(want.status, 2);
  await assert.rejects(lstmlm().load(dir, {isa: 'avx9'}), {status: 'LSTMLM_ERR_USAGE', exitCode: 2,
    message: 'LSTMLM_ISA=\'avx9\' is not a kernel level (use simd128 or scalar; unset for the best this CPU has)'});
  assert.match(want.stderr, /LSTMLM_ISA='avx9' is not a kernel level/);
  await assert.rejects(lstmlm().load(dir, {isa: 3}), {message: 'isa: expected a string, got 3'});
  await assert.rejects(lstmlm().load(dir, {precision: 'int4'}),
    {status: 'LSTMLM_ERR_USAGE', message: 'precision: expected fp32, bf16 or int8, got "int4"'});
  // The level is the load's alone: the next load gets the best again.
  const m = await lstmlm().load(dir);
  assert.equal(m.kernels, 'fp32/simd128');
  m.free();
});

test('a SentencePiece model is refused with a message, as the build has no SentencePiece', async () => {
  await assert.rejects(lstmlm().load('models/docs-spm'), {status: 'LSTMLM_ERR_MODEL',
    message: 'models/docs-spm/config.json: tokenizer.type "sentencepiece" needs the SentencePiece library, ' +
      'which this build (WebAssembly) does not have'});
});
