// Hostile model directories through the JavaScript API: each load is an LstmlmError whose message is the
// line the CLI prints for the same directory (`lstmlm score -m DIR`), never a trap of the module; after
// all of them the module still scores.
'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const {lstmlm, cliError} = require('./util.js');

const good = 'models/fairytales-word';

// name -> how to spoil a copy of the good model's directory.
const CASES = {
  'config not JSON': (d) => fs.writeFileSync(path.join(d, 'config.json'), '{"format": "lstmlm",'),
  'config an array': (d) => fs.writeFileSync(path.join(d, 'config.json'), '[1, 2]'),
  'config newer': (d) => editConfig(d, (c) => { c.format_version = 99; }),
  'config unknown field': (d) => editConfig(d, (c) => { c.colour = 'red'; }),
  'config huge hidden size': (d) => editConfig(d, (c) => { c.layers[0].hidden_size = 1e9; }),
  'config negative vocab': (d) => editConfig(d, (c) => { c.vocab_size = -5; }),
  'config a directory': (d) => { fs.rmSync(path.join(d, 'config.json')); fs.mkdirSync(path.join(d, 'config.json')); },
  'vocab missing': (d) => fs.rmSync(path.join(d, 'vocab.json')),
  'vocab short': (d) => {
    const v = JSON.parse(fs.readFileSync(path.join(d, 'vocab.json'), 'utf8'));
    fs.writeFileSync(path.join(d, 'vocab.json'), JSON.stringify(v.slice(1)));
  },
  'vocab invalid UTF-8': (d) => fs.writeFileSync(path.join(d, 'vocab.json'), Buffer.from([0x5b, 0x22, 0xff, 0x22, 0x5d])),
  'weights truncated': (d) => truncate(d, 100),
  'weights empty': (d) => truncate(d, 0),
  'weights header length huge': (d) => {
    const w = fs.readFileSync(path.join(d, 'weights.safetensors'));
    w.writeBigUInt64LE(0xffffffffffffn, 0);
    fs.writeFileSync(path.join(d, 'weights.safetensors'), w);
  },
  'weights header not JSON': (d) => {
    const w = fs.readFileSync(path.join(d, 'weights.safetensors'));
    w.fill(0x7b, 8, 20);
    fs.writeFileSync(path.join(d, 'weights.safetensors'), w);
  },
  'empty directory': (d) => { for (const f of fs.readdirSync(d)) fs.rmSync(path.join(d, f)); },
  'no such directory': (d) => fs.rmSync(d, {recursive: true}),
};

function editConfig(d, edit) {
  const c = JSON.parse(fs.readFileSync(path.join(d, 'config.json'), 'utf8'));
  edit(c);
  fs.writeFileSync(path.join(d, 'config.json'), JSON.stringify(c));
}

function truncate(d, n) {
  const f = path.join(d, 'weights.safetensors');
  fs.writeFileSync(f, fs.readFileSync(f).subarray(0, n));
}

test('a hostile model directory gives the CLI\'s message', async () => {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'lstmlm-wasm-hostile-'));
  try {
    for (const [name, spoil] of Object.entries(CASES)) {
      const dir = path.join(tmp, name.replace(/ /g, '-'));
      fs.cpSync(good, dir, {recursive: true});
      spoil(dir);
      const want = cliError(['score', '-m', dir], 'once upon a time\n');
      assert.notEqual(want.message, null, `${name}: the CLI gave no error: ${want.err}`);
      await assert.rejects(lstmlm().load(dir), (e) => {
        assert.equal(e.name, 'LstmlmError', `${name}: ${e.stack}`);
        assert.equal(e.message, want.message, name);
        assert.equal(e.exitCode, want.status, name);
        return true;
      });
    }
  } finally {
    fs.rmSync(tmp, {recursive: true, force: true});
  }
  const m = await lstmlm().load(good);
  assert.equal(m.score('once upon a time')[0].tokens, 5);
  m.free();
});
