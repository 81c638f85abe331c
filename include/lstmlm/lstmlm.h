/* lstmlm.h: the C API of lstmlm (docs/c-api.md). Plain C99, every symbol prefixed lstmlm_, for C, Rust, Go,
 * Java, C#, Python's ctypes and any language that binds a C ABI; liblstmlm.so exports these functions and
 * nothing else.
 *
 * The numbers are the CLI's, bit for bit: a state made with begin_of_sentence = 1 and stepped through the
 * ids of a text gives, at every step, the ln p that `lstmlm score --context document --no-eos -v word`
 * prints, and lstmlm_state_top gives `lstmlm predict --top K`'s candidates (the model is run statefully, as
 * with --stateful).
 *
 * Errors: every function but the version queries, lstmlm_last_error, lstmlm_status_name and the *_free
 * functions returns an lstmlm_status. Nothing is thrown, and nothing aborts or exits, across this ABI. On an
 * error the outputs are left unchanged (no state is advanced) and lstmlm_last_error() gives a one-line
 * message naming the function and what was wrong.
 *
 * Threads: an lstmlm_model is shared by any number of threads (every function taking a model is safe to call
 * concurrently on one model). An lstmlm_state is used by one thread at a time: functions that only read a
 * state (const lstmlm_state*) may run concurrently on it, but not while another thread advances or frees it.
 *
 * Buffers: functions that fill a caller's buffer (lstmlm_tokenize, lstmlm_detokenize, lstmlm_state_serialize)
 * take its capacity and set *needed to the size the whole result takes. They return LSTMLM_OK either way, and
 * write the result only when it fits (capacity >= *needed): call once with a NULL buffer and capacity 0 to
 * learn the size. */
#ifndef LSTMLM_LSTMLM_H
#define LSTMLM_LSTMLM_H

#include <stddef.h>
#include <stdint.h>

#if defined(__GNUC__) || defined(__clang__)
#define LSTMLM_API __attribute__((visibility("default")))
#else
#define LSTMLM_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* The ABI number: it changes when a function's signature or meaning, or a struct's layout, changes in a way
 * that breaks programs built against an earlier header. It is the SONAME's number (liblstmlm.so.1). */
#define LSTMLM_ABI_VERSION 1

/* The library's version, e.g. "0.1.0" (static storage). */
LSTMLM_API const char* lstmlm_version(void);
/* The ABI number of the library loaded at run time; compare it with LSTMLM_ABI_VERSION. */
LSTMLM_API int lstmlm_abi_version(void);

typedef enum lstmlm_status {
  LSTMLM_OK = 0,
  LSTMLM_ERR_USAGE = 1,   /* a call the API does not allow: a NULL pointer, a state of another model,
                             an option out of range, an absurd count */
  LSTMLM_ERR_INPUT = 2,   /* bad data: a token id outside [0, V), invalid UTF-8, a truncated or foreign
                             serialized state */
  LSTMLM_ERR_MODEL = 3,   /* a model directory that cannot be loaded (the message names the file and field) */
  LSTMLM_ERR_NOMEM = 4,   /* memory could not be allocated */
  LSTMLM_ERR_INTERNAL = 5 /* anything else (a bug: please report the message) */
} lstmlm_status;

/* The message of the last call on this thread that failed, "" after a call that succeeded. Valid until
 * the next lstmlm_ call on this thread; never NULL. */
LSTMLM_API const char* lstmlm_last_error(void);
/* "LSTMLM_OK", "LSTMLM_ERR_USAGE", ... for an lstmlm_status, "LSTMLM_ERR_UNKNOWN" for another value; static
 * storage. */
LSTMLM_API const char* lstmlm_status_name(int status);

/* Opaque handles. */
typedef struct lstmlm_model lstmlm_model;
typedef struct lstmlm_state lstmlm_state;
typedef struct lstmlm_boost lstmlm_boost;
typedef struct lstmlm_mix lstmlm_mix;

/* ---- Models ---------------------------------------------------------------------------------------- */

typedef enum lstmlm_precision {
  LSTMLM_PRECISION_FP32 = 0, /* the numerics contract (the CLI's default) */
  LSTMLM_PRECISION_BF16 = 1,
  LSTMLM_PRECISION_INT8 = 2
} lstmlm_precision;

/* Layer 0's input per token (the CLI's --fold-embedding): a table of V x 4H floats (ALWAYS: no product per
 * token, faster, more memory), the embedding through W_ih at every step (NEVER), or the table when it is no
 * larger than what it replaces or at most 4 MiB (AUTO). The layouts round differently: part of the bits. */
typedef enum lstmlm_fold { LSTMLM_FOLD_AUTO = 0, LSTMLM_FOLD_ALWAYS = 1, LSTMLM_FOLD_NEVER = 2 } lstmlm_fold;

/* Options of lstmlm_model_load. Initialize with LSTMLM_MODEL_OPTIONS_INIT, then set fields: struct_size
 * tells the library which fields the caller knows, so later versions can add fields at the end. */
typedef struct lstmlm_model_options {
  size_t struct_size;     /* sizeof(lstmlm_model_options) as the caller was compiled */
  int32_t threads;        /* engine threads per call; <= 0: one per core (the CLI's default); at most 256 */
  int32_t precision;      /* an lstmlm_precision */
  int32_t fold_embedding; /* an lstmlm_fold (a caller of the first version, without it: AUTO) */
} lstmlm_model_options;

#define LSTMLM_MODEL_OPTIONS_INIT \
  { sizeof(lstmlm_model_options), 0, LSTMLM_PRECISION_FP32, LSTMLM_FOLD_AUTO }

/* Loads the model directory `path` (config.json, vocab.json, weights.safetensors). options may be NULL (the
 * defaults). On success *out is a new model, freed with lstmlm_model_free. Thread-safe. */
LSTMLM_API lstmlm_status lstmlm_model_load(const char* path, const lstmlm_model_options* options,
                                           lstmlm_model** out);
/* Frees a model (NULL: nothing). No other thread may be using it. States of a freed model are still freed
 * with lstmlm_state_free, and serialized; every other use of them is an error. */
LSTMLM_API void lstmlm_model_free(lstmlm_model* model);

/* The vocabulary size V: token ids are 0 .. V-1. Thread-safe. */
LSTMLM_API lstmlm_status lstmlm_model_vocab_size(const lstmlm_model* model, int32_t* out);
/* The vocabulary string of `id` (an id outside [0, V) is LSTMLM_ERR_INPUT): *text is NUL-terminated and
 * owned by the model, valid until it is freed; *len (when len is not NULL) is its length in bytes.
 * Thread-safe. */
LSTMLM_API lstmlm_status lstmlm_model_token(const lstmlm_model* model, int32_t id, const char** text,
                                            size_t* len);
/* The id of the NUL-terminated vocabulary string `token`, -1 when the vocabulary has no such string (not an
 * error). Thread-safe. */
LSTMLM_API lstmlm_status lstmlm_model_token_id(const lstmlm_model* model, const char* token, int32_t* id);
/* The special tokens, -1 for each one the model does not have; any pointer may be NULL. *start is the token
 * a begin-of-sentence state is made with: bos_token, else eos_token. Thread-safe. */
LSTMLM_API lstmlm_status lstmlm_model_special_tokens(const lstmlm_model* model, int32_t* start, int32_t* eos,
                                                     int32_t* unk);
/* The kernels that run, "<precision>/<isa>", e.g. "fp32/avx512" (owned by the model). Thread-safe. */
LSTMLM_API lstmlm_status lstmlm_model_kernels(const lstmlm_model* model, const char** out);

/* ---- Text ------------------------------------------------------------------------------------------ */

/* Splits text_len bytes of UTF-8 `text` (one line, no start or end token added) into token ids, as
 * `lstmlm score` does: an out-of-vocabulary word is the unk id when the model has one and is skipped
 * otherwise. *needed is the number of ids; they are written to ids[0 .. *needed) when capacity >= *needed.
 * text may be NULL when text_len is 0, ids when capacity is 0. Invalid UTF-8 is LSTMLM_ERR_INPUT.
 * Thread-safe. */
LSTMLM_API lstmlm_status lstmlm_tokenize(const lstmlm_model* model, const char* text, size_t text_len,
                                         int32_t* ids, size_t capacity, size_t* needed);
/* The text of n ids, as the CLI prints it: words joined by spaces (characters joined, for a character
 * model), eos, bos and pad left out. *needed is its length in bytes plus one (the NUL); the text and its NUL
 * are written to buf when size >= *needed, else buf (when size > 0) gets "". An id outside [0, V) is
 * LSTMLM_ERR_INPUT. Thread-safe. */
LSTMLM_API lstmlm_status lstmlm_detokenize(const lstmlm_model* model, const int32_t* ids, size_t n, char* buf,
                                           size_t size, size_t* needed);

/* ---- States ---------------------------------------------------------------------------------------- */

/* A state is the recurrent state of one sequence (per layer h and c) and the distribution of its next
 * token (ln p over the V ids), kept so the log-probs of any tokens and the top candidates are read without
 * another engine call. A state belongs to the model that made it (or deserialized it); using it with
 * another model, even one loaded from the same directory, is LSTMLM_ERR_USAGE. */

/* A new state of `model`: begin_of_sentence != 0 feeds the start token (bos_token, else eos_token), as
 * `lstmlm score` and `lstmlm predict` begin a text; 0, or a model without either token, gives the empty
 * context (the zero state). Freed with lstmlm_state_free. Thread-safe. */
LSTMLM_API lstmlm_status lstmlm_state_new(const lstmlm_model* model, int begin_of_sentence,
                                          lstmlm_state** out);
/* A copy of `state`, of the same model. Safe while other threads read `state`. */
LSTMLM_API lstmlm_status lstmlm_state_clone(const lstmlm_state* state, lstmlm_state** out);
/* Frees a state (NULL: nothing); valid after its model is freed. */
LSTMLM_API void lstmlm_state_free(lstmlm_state* state);
/* *equal = 1 when the two states' h and c are equal value for value, else 0 (states of different models may
 * compare equal). Safe while other threads read the states. */
LSTMLM_API lstmlm_status lstmlm_state_equal(const lstmlm_state* a, const lstmlm_state* b, int* equal);

/* The state as bytes: the library's serialized stream, the same bytes the Python module's State.to_bytes()
 * and the server's exported sessions hold (docs/c-api.md). All numbers little-endian (x86-64's own order),
 * floats IEEE float32.
 *   offset 0       8 bytes   magic "LSTMLMST"
 *   offset 8       uint32    format version, 2
 *   offset 12      uint64    the model's fingerprint
 *   offset 20      int64     tokens fed since the stream began
 *   offset 28      uint32    L, the layers
 *   offset 32      uint32    N, the floats of `next` (V, or 0 when not computed)
 *   offset 36      L pairs of uint32: layer l's h floats, c floats
 *   then           layer 0's h, ..., layer L-1's h, layer 0's c, ..., layer L-1's c, next (ln p over V)
 * The bytes are written to buf when size >= *needed. Safe while other threads read the state; valid after its
 * model is freed. */
LSTMLM_API lstmlm_status lstmlm_state_serialize(const lstmlm_state* state, void* buf, size_t size,
                                                size_t* needed);
/* A new state of `model` from the `size` bytes lstmlm_state_serialize (or another front end) wrote for this
 * model. A truncated buffer, bytes left over, another magic or a newer version, a non-finite value, a state of
 * another model (its fingerprint) or of another shape (layers, widths, V) is LSTMLM_ERR_INPUT; format 1 bytes
 * are read too. Thread-safe. */
LSTMLM_API lstmlm_status lstmlm_state_deserialize(const lstmlm_model* model, const void* data, size_t size,
                                                  lstmlm_state** out);

/* ---- Stepping and reading ------------------------------------------------------------------------------ */

/* The largest n lstmlm_step_batch takes (2^24). */
#define LSTMLM_MAX_BATCH 16777216

/* Advances n independent states by one token each, states[i] by tokens[i], in one batched engine call, and
 * keeps each state's next distribution. When logprobs_out is not NULL it receives n rows of V floats: row i
 * is ln p of every next token after states[i]'s new context (the distribution lstmlm_state_logprob reads).
 * The results are bit-identical to stepping each state alone, whatever n and position. n = 0 does nothing
 * (OK; the arrays may be NULL); n > LSTMLM_MAX_BATCH, a NULL or repeated state, or a state of another model
 * is LSTMLM_ERR_USAGE; a token outside [0, V) is LSTMLM_ERR_INPUT. All of them are checked before any state
 * changes. Thread-safe for the model: concurrent calls on one model each lease an engine of the model's pool
 * (calls beyond its engines wait for one); each state in one call only. */
LSTMLM_API lstmlm_status lstmlm_step_batch(const lstmlm_model* model, lstmlm_state* const states[],
                                           const int32_t tokens[], size_t n, float* logprobs_out);

/* *out = ln p(token | state): the kept distribution's entry, no engine call. A token outside [0, V) is
 * LSTMLM_ERR_INPUT. Safe while other threads read the state. */
LSTMLM_API lstmlm_status lstmlm_state_logprob(const lstmlm_model* model, const lstmlm_state* state,
                                              int32_t token, float* out);
/* Copies the whole kept distribution (V floats, capacity >= V or LSTMLM_ERR_USAGE) to out. Safe while other
 * threads read the state. */
LSTMLM_API lstmlm_status lstmlm_state_logprobs(const lstmlm_model* model, const lstmlm_state* state,
                                               float* out, size_t capacity);
/* The k most probable next tokens, as `lstmlm predict --top k`: by descending ln p, ties by ascending id.
 * *n_out = min(k, V) entries are written to ids and (when not NULL) logprobs, which hold k entries each;
 * ids may be NULL when k is 0. Safe while other threads read the state. */
LSTMLM_API lstmlm_status lstmlm_state_top(const lstmlm_model* model, const lstmlm_state* state, size_t k,
                                          int32_t* ids, float* logprobs, size_t* n_out);

/* ---- Keyboards: word completion and boosting ---- */

/* Loads boosts for `model`: one entry per line, the phrase (tokenized as a context), a tab, the bonus in
 * natural-log units within [-100, 100]; '#' starts a comment line. An entry applies to the last token of its
 * phrase when the tokens before it end the history; the bonuses of every entry that applies add up, and the
 * boosted distribution is renormalized: lp'_j = lp_j + b_j - ln sum_k exp(lp_k + b_k). A malformed line is
 * LSTMLM_ERR_INPUT naming FILE:LINE. The boost is immutable: share it between threads; use it only with its
 * model (LSTMLM_ERR_USAGE otherwise). */
LSTMLM_API lstmlm_status lstmlm_boost_load(const lstmlm_model* model, const char* path, lstmlm_boost** out);
/* The same from text in memory (`text_len` bytes, lines separated by '\n'); messages name "<boost>:LINE". */
LSTMLM_API lstmlm_status lstmlm_boost_parse(const lstmlm_model* model, const char* text, size_t text_len,
                                            lstmlm_boost** out);
/* Frees a boost (NULL is ignored). */
LSTMLM_API void lstmlm_boost_free(lstmlm_boost* boost);
/* *out = the number of entries. */
LSTMLM_API lstmlm_status lstmlm_boost_size(const lstmlm_boost* boost, size_t* out);

/* A keystroke: the k most probable next words of a word model that start with `prefix` (UTF-8, `prefix_len`
 * bytes; lowercased when the model's tokenizer lowercases; empty: every word), from the distribution the
 * state keeps (no engine call), by descending ln p, ties by ascending id, as `lstmlm predict --prefix`.
 * Special tokens are never completions, nor unk for a non-empty prefix. `boost` (or NULL) is applied first,
 * with `history` (n_history token ids before the state, most recent last; NULL when 0) for its phrases.
 * *n_out = the completions written (at most k) to ids and (when not NULL) logprobs. A character model is
 * LSTMLM_ERR_USAGE (its completions are strings: `lstmlm predict --prefix` and the Python module give them).
 * Safe while other threads read the state and the boost. */
LSTMLM_API lstmlm_status lstmlm_state_complete(const lstmlm_model* model, const lstmlm_state* state,
                                               const char* prefix, size_t prefix_len,
                                               const lstmlm_boost* boost, const int32_t* history,
                                               size_t n_history, size_t k, int32_t* ids, float* logprobs,
                                               size_t* n_out);

/* ---- Mixing with ARPA n-gram models and other word models ---- */

/* ARPA n-gram models and neural word models (a model directory) mixed into a word model's distributions, as
 * `lstmlm predict --mix PATH:WEIGHT --mix-mode MODE` (docs/mixing.md): `specs` holds n strings "PATH:WEIGHT"
 * (the last ':' splits), each weight
 * in (0, 1] and their sum at most 1, the model getting the rest; `mode` "linear" (or NULL) or "loglinear". A malformed ARPA file is LSTMLM_ERR_MODEL naming its file
 * and line; a bad spec or weight, n = 0 or a model that is not a word model is LSTMLM_ERR_USAGE. Immutable:
 * share it between threads; use it only with its model. */
LSTMLM_API lstmlm_status lstmlm_mix_load(const lstmlm_model* model, const char* const specs[], size_t n,
                                         const char* mode, lstmlm_mix** out);
/* Frees a mixture (NULL is ignored). */
LSTMLM_API void lstmlm_mix_free(lstmlm_mix* mix);
/* The mixture's ln p of every next token after `state` (V floats to out, capacity >= V): a word's is the one
 * `lstmlm score --mix` gives it, unk's what the others leave (every word the model lacks), so the row sums to
 * 1. The n-gram models need the words before: `history` holds the n_history token ids fed to the state since
 * lstmlm_state_new (most recent last; NULL when 0), and begin_of_sentence says whether that state_new fed the
 * start token (the n-gram models then start at <s>). An n-gram model reads the last order - 1 tokens, a
 * neural one all of them. Safe while other threads read the state and the mixture. */
LSTMLM_API lstmlm_status lstmlm_mix_logprobs(const lstmlm_mix* mix, const lstmlm_state* state,
                                             const int32_t* history, size_t n_history, int begin_of_sentence,
                                             float* out, size_t capacity);

/* ---- Tasks as JSON lines ---- */

/* The records of a task as the CLI writes them with --output-format jsonl: one JSON object per line, each line
 * ended by '\n'. *out receives a NUL-terminated string of the library's, freed with lstmlm_string_free;
 * *out_len (when out_len is not NULL) its length in bytes. On an error *out is NULL. Each call leases one
 * engine of the model's pool (thread-safe for the model). Every option not named here is the CLI's default
 * (the model's own window: its config's input_length as a Pad window, else the carried state). */

/* `lstmlm score -v word --output-format jsonl` of `text` read as a file from stdin ("file": "-"): text_len
 * bytes of UTF-8, split into lines as the CLI reads a file ("\n" or "\r\n"; a leading BOM dropped), each a
 * sentence; one record per line, then the summary. Invalid UTF-8 is LSTMLM_ERR_INPUT. */
LSTMLM_API lstmlm_status lstmlm_score_jsonl(const lstmlm_model* model, const char* text, size_t text_len,
                                            char** out, size_t* out_len);
/* Options of lstmlm_score_jsonl_options: initialize with LSTMLM_SCORE_OPTIONS_INIT (the CLI's defaults), then
 * set fields. A bad value is LSTMLM_ERR_USAGE naming the field. */
typedef struct lstmlm_score_options {
  size_t struct_size;  /* sizeof(lstmlm_score_options) as the caller was compiled */
  const char* softmax; /* --softmax: "full" (or NULL) or "skip" (each score the target's logit, no normaliser;
                          every record with "softmax": "skip") */
  int32_t reverse;     /* nonzero: --reverse (a right-to-left model: each line's tokens scored last to first) */
} lstmlm_score_options;

#define LSTMLM_SCORE_OPTIONS_INIT \
  { sizeof(lstmlm_score_options), NULL, 0 }

/* lstmlm_score_jsonl with options (NULL: the defaults). */
LSTMLM_API lstmlm_status lstmlm_score_jsonl_options(const lstmlm_model* model, const char* text, size_t text_len,
                                                    const lstmlm_score_options* options, char** out,
                                                    size_t* out_len);
/* `lstmlm predict --top TOP [--prefix PREFIX] --output-format jsonl CONTEXT`: one record. top 0 is the whole
 * vocabulary (negative: LSTMLM_ERR_USAGE); prefix_len 0 is no prefix (prefix may then be NULL). */
LSTMLM_API lstmlm_status lstmlm_predict_jsonl(const lstmlm_model* model, const char* context, size_t context_len,
                                              int32_t top, const char* prefix, size_t prefix_len, char** out,
                                              size_t* out_len);
/* lstmlm_predict_jsonl of n contexts (contexts[i], context_lens[i] bytes) in engine batches (of 64), as
 * `lstmlm predict` of the contexts given one per line on stdin: n records in order, each equal to the
 * context's own lstmlm_predict_jsonl record (batch invariance). An error names the context as the CLI names
 * a line ("stdin:3: ..."). n at most LSTMLM_MAX_BATCH. */
LSTMLM_API lstmlm_status lstmlm_predict_batch_jsonl(const lstmlm_model* model, const char* const contexts[],
                                                    const size_t context_lens[], size_t n, int32_t top,
                                                    const char* prefix, size_t prefix_len, char** out,
                                                    size_t* out_len);
/* `lstmlm predict --top TOP --softmax SOFTMAX --output-format jsonl CONTEXT`: "full" (NULL) or "skip" (the
 * candidates ranked by their logits: {"token", "id", "logit"}, the record with "softmax": "skip"). */
LSTMLM_API lstmlm_status lstmlm_predict_jsonl_softmax(const lstmlm_model* model, const char* context,
                                                      size_t context_len, int32_t top, const char* softmax,
                                                      char** out, size_t* out_len);

/* Options of lstmlm_generate_jsonl: initialize with LSTMLM_GENERATE_OPTIONS_INIT (the CLI's defaults, seed
 * 0), then set fields. An out-of-range value is LSTMLM_ERR_USAGE naming the field, as the CLI's option. */
typedef struct lstmlm_generate_options {
  size_t struct_size;  /* sizeof(lstmlm_generate_options) as the caller was compiled */
  int32_t max_tokens;  /* tokens per sample, eos included (--max-tokens) */
  int32_t num_samples; /* samples, run as one batch (--num-samples) */
  float temperature;   /* 0: greedy (--temperature) */
  int32_t top_k;       /* 0: off (--top-k) */
  float top_p;         /* 1: off (--top-p) */
  uint64_t seed;       /* --seed: sample i draws from the seed's stream i */
  /* The neural cache over the prompt and each sample's own tokens (--cache-window, --cache-lambda,
   * --cache-theta; docs/mixing.md); a caller of the first version, without these fields: no cache. */
  int32_t cache_window; /* 0: off */
  double cache_lambda;
  double cache_theta;
} lstmlm_generate_options;

#define LSTMLM_GENERATE_OPTIONS_INIT \
  { sizeof(lstmlm_generate_options), 100, 1, 1.0f, 0, 1.0f, 0, 0, 0.12785, 0.6625 }

/* `lstmlm generate -p PROMPT --seed SEED ... --output-format jsonl`: one record per sample, in index order;
 * the same text as the CLI's for the same seed. options may be NULL (the defaults). */
LSTMLM_API lstmlm_status lstmlm_generate_jsonl(const lstmlm_model* model, const char* prompt, size_t prompt_len,
                                               const lstmlm_generate_options* options, char** out,
                                               size_t* out_len);
/* Frees a string the library gave (NULL: nothing). */
LSTMLM_API void lstmlm_string_free(char* s);

/* ---- Beam search ---- */

/* Options of lstmlm_beam_search, as `lstmlm generate --beam-size` (docs/generation.md). Initialize with
 * LSTMLM_SEARCH_OPTIONS_INIT, then set fields. Out-of-range values are LSTMLM_ERR_USAGE naming the field. */
typedef struct lstmlm_search_options {
  size_t struct_size;      /* sizeof(lstmlm_search_options) as the caller was compiled */
  int32_t max_tokens;      /* tokens per hypothesis, eos included (100) */
  int32_t beam_size;       /* K hypotheses kept per step, in [1, 1000] (4) */
  int32_t n_best;          /* hypotheses returned, in [1, beam_size] (1) */
  float length_penalty;    /* GNMT's: a hypothesis ranks by its log-prob / ((5 + len) / 6)^A; 0 = off */
  int32_t no_repeat_ngram; /* no n-gram of this many tokens twice in prompt + hypothesis; 0 = off */
  int32_t stop_at_eos;     /* -1: when the model has an eos token; 0: never; 1: always */
  const char* regex;       /* the generated text must match it (NULL: no pattern) */
  const char* const* allowed_words; /* only these words (and the end) may be generated; NULL: any */
  size_t n_allowed_words;
  const char* const* bias_tokens; /* --logit-bias: n_bias words or decimal ids, and their values */
  const float* bias_values;
  size_t n_bias;
} lstmlm_search_options;

#define LSTMLM_SEARCH_OPTIONS_INIT \
  { sizeof(lstmlm_search_options), 100, 4, 1, 0.0f, 0, -1, NULL, NULL, 0, NULL, NULL, 0 }

typedef struct lstmlm_hypotheses lstmlm_hypotheses;

/* Beam search after `prompt` (UTF-8, prompt_len bytes; NULL when 0), as `lstmlm generate --beam-size`: the
 * same hypotheses, bit for bit, for any thread count. `options` NULL: LSTMLM_SEARCH_OPTIONS_INIT. On success
 * *out holds the n_best hypotheses, best first, freed with lstmlm_hypotheses_free. A constraint no text can
 * satisfy is LSTMLM_ERR_USAGE naming the step and the text so far. Thread-safe. */
LSTMLM_API lstmlm_status lstmlm_beam_search(const lstmlm_model* model, const char* prompt, size_t prompt_len,
                                            const lstmlm_search_options* options, lstmlm_hypotheses** out);
/* *out = the number of hypotheses. */
LSTMLM_API lstmlm_status lstmlm_hypotheses_count(const lstmlm_hypotheses* h, size_t* out);
/* Hypothesis i (0 = best; i >= count is LSTMLM_ERR_USAGE): its generated text (NUL-terminated, the prompt not
 * included), its n_tokens ids and each one's ln p, the model's total ln p and the search's score. Any output
 * pointer may be NULL. The pointers live as long as `h`. */
LSTMLM_API lstmlm_status lstmlm_hypothesis(const lstmlm_hypotheses* h, size_t i, const char** text,
                                           const int32_t** ids, const float** logprobs, size_t* n_tokens,
                                           double* logprob, double* score);
/* Frees hypotheses (NULL is ignored). */
LSTMLM_API void lstmlm_hypotheses_free(lstmlm_hypotheses* h);

#ifdef __cplusplus
}
#endif

#endif /* LSTMLM_LSTMLM_H */
