// The WebAssembly build's fma (src/kernels/fma.hpp) rounds once: its results equal x86-64's vfmadd231ss on
// the hard cases and on 4 million float triples of tests/wasm/fma_check.cpp's stream. The expected values
// were printed by the same program compiled natively (g++ -march=native, an AMD EPYC with FMA): their hash
// of the stream is dc9c3f51853a116a, where emscripten's own fmaf (musl's, rounding twice without the
// floating-point flags it relies on) gives b504f62413b82adb.
'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const {execFileSync} = require('node:child_process');
const path = require('node:path');
const {wasmDir} = require('./util.js');

test('fma_rn gives x86-64\'s fma bits', () => {
  const out = execFileSync('node', [path.join(wasmDir, 'obj', 'fma_check.js')], {encoding: 'utf8'});
  assert.deepEqual(out.trim().split('\n'), [
    'f79867dc',  // 0x1.55p-5 * -0x1.c9aap+116 + 0x1.acb954p-9 = -0x1.30cfb8p+112 (musl: ...bap+112)
    '652851bc',  // -0x1.b5p-7 * -0x1.8a6ap+81 - 0x1.59fed4p+10 = 0x1.50a378p+75 (musl: ...7ap+75)
    'b3800000',  // (1 + 2^-12)(1 - 2^-12) - 1 = -2^-24 exactly
    '00000002',  // 2^-126 * 2^-24 + 2^-149 = 2^-148, a subnormal
    'dc9c3f51853a116a',
  ]);
});
