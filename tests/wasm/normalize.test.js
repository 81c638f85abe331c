// --normalize without ICU (the WebAssembly build): none and lower run (lower is the library's own table,
// Python's str.lower()), nfkc and ccnet are refused with one line naming the option.
'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const {execFileSync} = require('node:child_process');
const path = require('node:path');
const {wasmDir} = require('./util.js');

test('the normalize modes that need ICU are refused', () => {
  const out = execFileSync('node', [path.join(wasmDir, 'obj', 'normalize_check.js')], {encoding: 'utf8'});
  const why = ': needs ICU, which this build (WebAssembly) does not have: use none or lower, or normalize the ' +
    'text before';
  assert.deepEqual(out.trim().split('\n'), [
    'none: Ünïcode ÀB',
    'lower: ünïcode àb',
    'nfkc: error: --normalize nfkc' + why,
    'ccnet: error: --normalize ccnet' + why,
  ]);
});
