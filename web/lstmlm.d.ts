// The JavaScript API of lstmlm's WebAssembly build (docs/web.md): web/api.js.

/** A failed call: `message` is the one line the CLI prints after "lstmlm: error: ". */
export class LstmlmError extends Error {
  /** The C API's status: "LSTMLM_ERR_USAGE", "LSTMLM_ERR_INPUT", "LSTMLM_ERR_MODEL", "LSTMLM_ERR_NOMEM", ... */
  readonly status: string;
  /** The CLI's exit status for the same error: 2 for a usage error, else 1. */
  readonly exitCode: number;
}

/** Text as a string (UTF-8), or bytes (which may be invalid UTF-8: an error naming the line and byte). */
export type Text = string | Uint8Array;

/** One word of a score line record. */
export interface WordRecord {
  token: string;
  id: number;
  oov: boolean;
  logprob: number | null;
  log10prob: number | null;
  [field: string]: unknown;
}

/** A record of `lstmlm score -v word --output-format jsonl`: one per line, then the summary. */
export interface ScoreRecord {
  type: 'line' | 'summary';
  [field: string]: unknown;
}

export interface Candidate {
  token: string;
  id: number;
  prob: number;
  logprob: number;
}

/** The record of `lstmlm predict --output-format jsonl`. */
export interface PredictionRecord {
  type: 'prediction';
  context: string;
  ids: number[];
  top: Candidate[];
  [field: string]: unknown;
}

/** The record of `lstmlm generate --output-format jsonl`. */
export interface SampleRecord {
  type: 'sample';
  sample: number;
  seed: number;
  prompt: string;
  text: string;
  tokens: Candidate[];
  logprob: number;
  stopped_at_eos: boolean;
  [field: string]: unknown;
}

export interface PredictOptions {
  /** Candidates; 0: the whole vocabulary (default 10). */
  top?: number;
  /** The letters of the word being typed (`--prefix`). */
  prefix?: Text;
}

export interface GenerateOptions {
  /** Tokens to generate, eos included (default 100). */
  n?: number;
  /** 0: greedy (default 1). */
  temperature?: number;
  /** 0: off (default). */
  top_k?: number;
  /** 1: off (default). */
  top_p?: number;
  /** The CLI's --seed (default 0): the same seed gives the CLI's text. */
  seed?: number | bigint;
}

/** The recurrent state of one stream and the distribution of its next token. */
export class State {
  /** Tokens fed through advance(). */
  readonly tokens: number;
  /** Feeds token ids, or a text tokenized as score reads a line; returns this state. */
  advance(input: number[] | Text): this;
  /** ln p of the next token `id`. */
  logprob(id: number): number;
  /** The k most probable next tokens, as `lstmlm predict --top k`. */
  top(k?: number): Candidate[];
  /** A word model's completions of a half-typed word, as `lstmlm predict --prefix`. */
  complete(prefix: Text, k?: number): Candidate[];
  clone(): State;
  /** Frees the state's memory now (else when it is garbage-collected). */
  free(): void;
}

export class Model {
  /** The directory the model was loaded from (given files: "/models/NAME"). */
  readonly path: string;
  /** The kernels that run: "fp32/simd128" (the WebAssembly bits) or "fp32/scalar" (the native bits). */
  readonly kernels: string;
  readonly vocabSize: number;
  /** The vocabulary string of a token id. */
  token(id: number): string;
  /** A line's token ids, as score reads it. */
  tokenize(text: Text): number[];
  /** `lstmlm score -v word --output-format jsonl` of the text's lines (each a sentence). */
  score(text: Text): ScoreRecord[];
  /** `lstmlm predict --top TOP [--prefix PREFIX] --output-format jsonl CONTEXT`. */
  predict(context: Text, options?: PredictOptions): PredictionRecord;
  /** The records of many contexts, run in engine batches of 64 (`lstmlm predict` of the contexts on stdin,
   * one per line): each equal, bit for bit, to the context's own `predict`. */
  predict(contexts: Text[], options?: PredictOptions): PredictionRecord[];
  /** `lstmlm generate -p PROMPT -n N --seed SEED ... --output-format jsonl`: the sample. */
  generate(prompt?: Text, options?: GenerateOptions): SampleRecord;
  /** A new stream; bos (default true) feeds the start token first, as score and predict begin a text. */
  state(bos?: boolean): State;
  /** Frees the model's memory now (else when it is garbage-collected). */
  free(): void;
}

export interface LoadOptions {
  /** The module's bytes or URL (default: lstmlm.wasm beside lstmlm.js); the first load makes the module. */
  wasm?: ArrayBuffer | Uint8Array | string;
  /** The directory given files get in messages: "/models/NAME" (default model0, model1, ...). */
  name?: string;
  /** The kernel level, as the CLI's LSTMLM_ISA: "simd128" (default: fp32 on SIMD128, a multiply then an
   * add, within 1e-5 of the native logprobs) or "scalar" (the native build's bits exactly, slower). */
  isa?: 'simd128' | 'scalar';
  /** The CLI's --precision: "fp32" (default), "int8" (int8 weights, the native int8 bits at both levels:
   * exact integer sums), "bf16" (plain code only). */
  precision?: 'fp32' | 'int8' | 'bf16';
}

/** Loads a model: in Node a model directory's path; anywhere its files (config.json, vocab.json,
 * weights.safetensors) as ArrayBuffers, Uint8Arrays or URLs. */
export function load(source: string | Record<string, ArrayBuffer | Uint8Array | string>,
                     options?: LoadOptions): Promise<Model>;
/** The library's version. */
export function version(options?: {wasm?: ArrayBuffer | Uint8Array | string}): Promise<string>;
