/* The C API from plain C99 (compiled with -std=c99 -Wall -Wextra -Wpedantic -Werror; tests/CMakeLists.txt):
 *
 *   capi_test WORD_MODEL CHAR_MODEL      (models/fairytales-word, models/charrnn-space)
 *
 * Versions, the vocabulary, tokenize/detokenize, three states of different contexts stepped in batches
 * against the same states stepped alone (bit for bit: logprobs rows, kept distributions, top candidates,
 * serialized bytes), serialize/deserialize round trips, bad input (every error returns its status and a
 * message, and leaves the states as they were), and four threads sharing the model. Exits 0 when every check
 * passes; under ASan, with nothing leaked. */
#define _POSIX_C_SOURCE 200809L /* pthreads under -std=c99 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lstmlm/lstmlm.h"

static int failures = 0;
static int checks = 0;

#define CHECK(cond)                                                                                \
  do {                                                                                             \
    ++checks;                                                                                      \
    if (!(cond)) {                                                                                 \
      fprintf(stderr, "%s:%d: CHECK(%s) failed (last error: \"%s\")\n", __FILE__, __LINE__, #cond, \
              lstmlm_last_error());                                                                \
      ++failures;                                                                                  \
    }                                                                                              \
  } while (0)

/* The call returns `want`; an error comes with a message (printed), a success with none. */
#define EXPECT(call, want) expect_status((call), (want), #call, __LINE__)

static void expect_status(lstmlm_status got, lstmlm_status want, const char* call, int line) {
  const char* msg = lstmlm_last_error();
  ++checks;
  if (got != want) {
    fprintf(stderr, "%s:%d: %s returned %s, expected %s (last error: \"%s\")\n", __FILE__, line, call,
            lstmlm_status_name(got), lstmlm_status_name(want), msg);
    ++failures;
  } else if (want != LSTMLM_OK && (msg == NULL || msg[0] == '\0')) {
    fprintf(stderr, "%s:%d: %s returned %s without a message\n", __FILE__, line, call,
            lstmlm_status_name(got));
    ++failures;
  } else if (want == LSTMLM_OK && (msg == NULL || msg[0] != '\0')) {
    fprintf(stderr, "%s:%d: %s succeeded but left the message \"%s\"\n", __FILE__, line, call, msg);
    ++failures;
  } else if (want != LSTMLM_OK) {
    printf("  %-17s %s\n", lstmlm_status_name(got), msg);
  }
}

static void* xmalloc(size_t n) {
  void* p = malloc(n ? n : 1);
  if (p == NULL) {
    fprintf(stderr, "out of memory\n");
    exit(1);
  }
  return p;
}

/* The serialized bytes of a state (malloc'ed; *size set). */
static unsigned char* bytes_of(const lstmlm_state* s, size_t* size) {
  size_t needed = 0;
  unsigned char* buf;
  EXPECT(lstmlm_state_serialize(s, NULL, 0, &needed), LSTMLM_OK);
  buf = xmalloc(needed);
  EXPECT(lstmlm_state_serialize(s, buf, needed, size), LSTMLM_OK);
  CHECK(*size == needed);
  return buf;
}

/* The two states serialize to the same bytes: h, c and the next distribution bit for bit. */
static int same_bytes(const lstmlm_state* a, const lstmlm_state* b) {
  size_t na = 0, nb = 0;
  unsigned char* ba = bytes_of(a, &na);
  unsigned char* bb = bytes_of(b, &nb);
  int same = na == nb && memcmp(ba, bb, na) == 0;
  free(ba);
  free(bb);
  return same;
}

static lstmlm_model* load(const char* path) {
  lstmlm_model_options o = LSTMLM_MODEL_OPTIONS_INIT;
  lstmlm_model* m = NULL;
  o.threads = 2;
  EXPECT(lstmlm_model_load(path, &o, &m), LSTMLM_OK);
  if (m == NULL) {
    fprintf(stderr, "cannot load %s: %s\n", path, lstmlm_last_error());
    exit(1);
  }
  return m;
}

static void test_versions(void) {
  const char* v = lstmlm_version();
  printf("versions\n");
  CHECK(lstmlm_abi_version() == LSTMLM_ABI_VERSION);
  CHECK(v != NULL && v[0] >= '0' && v[0] <= '9' && strchr(v, '.') != NULL);
  CHECK(strcmp(lstmlm_status_name(LSTMLM_OK), "LSTMLM_OK") == 0);
  CHECK(strcmp(lstmlm_status_name(LSTMLM_ERR_INPUT), "LSTMLM_ERR_INPUT") == 0);
  CHECK(strcmp(lstmlm_status_name(99), "LSTMLM_ERR_UNKNOWN") == 0);
  CHECK(lstmlm_last_error() != NULL);
  printf("  lstmlm %s, ABI %d\n", v, lstmlm_abi_version());
}

static void test_load_errors(const char* path) {
  struct {
    lstmlm_model_options o;
    int64_t later_field;
  } big;
  lstmlm_model_options o = LSTMLM_MODEL_OPTIONS_INIT;
  lstmlm_model* m = NULL;
  printf("loading\n");
  EXPECT(lstmlm_model_load(NULL, NULL, &m), LSTMLM_ERR_USAGE);
  EXPECT(lstmlm_model_load(path, NULL, NULL), LSTMLM_ERR_USAGE);
  EXPECT(lstmlm_model_load("/nonexistent/model", NULL, &m), LSTMLM_ERR_MODEL);
  CHECK(m == NULL);
  o.struct_size = 4;
  EXPECT(lstmlm_model_load(path, &o, &m), LSTMLM_ERR_USAGE);
  o.struct_size = sizeof o;
  o.precision = 9;
  EXPECT(lstmlm_model_load(path, &o, &m), LSTMLM_ERR_USAGE);
  o.precision = LSTMLM_PRECISION_FP32;
  o.threads = 100000;
  EXPECT(lstmlm_model_load(path, &o, &m), LSTMLM_ERR_USAGE);
  CHECK(m == NULL);
  /* A caller built against a later header: unknown fields left zero are accepted, set ones are not. */
  memset(&big, 0, sizeof big);
  big.o.struct_size = sizeof big;
  big.o.threads = 1;
  big.later_field = 1;
  EXPECT(lstmlm_model_load(path, &big.o, &m), LSTMLM_ERR_USAGE);
  big.later_field = 0;
  EXPECT(lstmlm_model_load(path, &big.o, &m), LSTMLM_OK);
  CHECK(m != NULL);
  lstmlm_model_free(m);
  m = NULL;
  o.threads = 1;
  o.precision = LSTMLM_PRECISION_INT8;
  EXPECT(lstmlm_model_load(path, &o, &m), LSTMLM_OK);
  if (m != NULL) {
    const char* kernels = NULL;
    EXPECT(lstmlm_model_kernels(m, &kernels), LSTMLM_OK);
    CHECK(kernels != NULL && strncmp(kernels, "int8/", 5) == 0);
  }
  lstmlm_model_free(m);
  lstmlm_model_free(NULL);
}

static void test_vocabulary(const lstmlm_model* m) {
  int32_t v = 0, id = 0, start = 0, eos = 0, unk = 0, bad_ids = 0;
  const char* text = NULL;
  size_t len = 0;
  printf("vocabulary\n");
  EXPECT(lstmlm_model_vocab_size(m, &v), LSTMLM_OK);
  CHECK(v == 554);
  for (id = 0; id < v; ++id) {
    int32_t back = -2;
    if (lstmlm_model_token(m, id, &text, &len) != LSTMLM_OK || strlen(text) != len ||
        lstmlm_model_token_id(m, text, &back) != LSTMLM_OK || back != id)
      ++bad_ids;
  }
  CHECK(bad_ids == 0);
  EXPECT(lstmlm_model_token(m, 2, &text, NULL), LSTMLM_OK);
  CHECK(strcmp(text, "the") == 0);
  EXPECT(lstmlm_model_token_id(m, "no-such-word", &id), LSTMLM_OK);
  CHECK(id == -1);
  EXPECT(lstmlm_model_special_tokens(m, &start, &eos, &unk), LSTMLM_OK);
  CHECK(start == 1 && eos == 1 && unk == 0); /* no bos_token: the start token is eos */
  EXPECT(lstmlm_model_special_tokens(m, NULL, NULL, NULL), LSTMLM_OK);
  EXPECT(lstmlm_model_token(m, v, &text, &len), LSTMLM_ERR_INPUT);
  EXPECT(lstmlm_model_token(m, -1, &text, &len), LSTMLM_ERR_INPUT);
  EXPECT(lstmlm_model_token(m, 0, NULL, &len), LSTMLM_ERR_USAGE);
  EXPECT(lstmlm_model_token(NULL, 0, &text, &len), LSTMLM_ERR_USAGE);
  EXPECT(lstmlm_model_token_id(m, NULL, &id), LSTMLM_ERR_USAGE);
  EXPECT(lstmlm_model_vocab_size(m, NULL), LSTMLM_ERR_USAGE);
  EXPECT(lstmlm_model_vocab_size(NULL, &v), LSTMLM_ERR_USAGE);
}

static void test_text(const lstmlm_model* m) {
  const char* s = "The OLD man saw a fox";
  int32_t ids[8], the = 0, old = 0, man = 0, saw = 0, a = 0;
  int32_t eos_ids[4];
  char buf[64];
  size_t needed = 0, i;
  printf("text\n");
  EXPECT(lstmlm_model_token_id(m, "the", &the), LSTMLM_OK);
  EXPECT(lstmlm_model_token_id(m, "old", &old), LSTMLM_OK);
  EXPECT(lstmlm_model_token_id(m, "man", &man), LSTMLM_OK);
  EXPECT(lstmlm_model_token_id(m, "saw", &saw), LSTMLM_OK);
  EXPECT(lstmlm_model_token_id(m, "a", &a), LSTMLM_OK);
  EXPECT(lstmlm_tokenize(m, s, strlen(s), NULL, 0, &needed), LSTMLM_OK);
  CHECK(needed == 6);
  for (i = 0; i < 8; ++i) ids[i] = -7;
  EXPECT(lstmlm_tokenize(m, s, strlen(s), ids, 5, &needed), LSTMLM_OK);
  CHECK(needed == 6 && ids[0] == -7); /* too small: nothing written */
  EXPECT(lstmlm_tokenize(m, s, strlen(s), ids, 8, &needed), LSTMLM_OK);
  CHECK(needed == 6);
  /* lowercased; "fox" is out of the vocabulary: the unk id 0 */
  CHECK(ids[0] == the && ids[1] == old && ids[2] == man && ids[3] == saw && ids[4] == a && ids[5] == 0);
  CHECK(ids[6] == -7);
  EXPECT(lstmlm_tokenize(m, NULL, 0, NULL, 0, &needed), LSTMLM_OK);
  CHECK(needed == 0);
  EXPECT(lstmlm_tokenize(m, "the \xff", 5, ids, 8, &needed), LSTMLM_ERR_INPUT);
  EXPECT(lstmlm_tokenize(m, NULL, 3, ids, 8, &needed), LSTMLM_ERR_USAGE);
  EXPECT(lstmlm_tokenize(m, s, strlen(s), NULL, 8, &needed), LSTMLM_ERR_USAGE);
  EXPECT(lstmlm_tokenize(m, s, strlen(s), ids, 8, NULL), LSTMLM_ERR_USAGE);

  EXPECT(lstmlm_detokenize(m, ids, 3, buf, sizeof buf, &needed), LSTMLM_OK);
  CHECK(strcmp(buf, "the old man") == 0 && needed == 12);
  EXPECT(lstmlm_detokenize(m, ids, 3, NULL, 0, &needed), LSTMLM_OK);
  CHECK(needed == 12);
  strcpy(buf, "unchanged");
  EXPECT(lstmlm_detokenize(m, ids, 3, buf, 11, &needed), LSTMLM_OK);
  CHECK(needed == 12 && buf[0] == '\0'); /* too small: "" */
  eos_ids[0] = 1;
  eos_ids[1] = the;
  eos_ids[2] = 1;
  EXPECT(lstmlm_detokenize(m, eos_ids, 3, buf, sizeof buf, &needed), LSTMLM_OK);
  CHECK(strcmp(buf, "the") == 0); /* eos left out */
  EXPECT(lstmlm_detokenize(m, NULL, 0, buf, sizeof buf, &needed), LSTMLM_OK);
  CHECK(strcmp(buf, "") == 0 && needed == 1);
  eos_ids[1] = 554;
  EXPECT(lstmlm_detokenize(m, eos_ids, 3, buf, sizeof buf, &needed), LSTMLM_ERR_INPUT);
  eos_ids[1] = -1;
  EXPECT(lstmlm_detokenize(m, eos_ids, 3, buf, sizeof buf, &needed), LSTMLM_ERR_INPUT);
  EXPECT(lstmlm_detokenize(m, NULL, 2, buf, sizeof buf, &needed), LSTMLM_ERR_USAGE);
  EXPECT(lstmlm_detokenize(m, ids, 3, NULL, 5, &needed), LSTMLM_ERR_USAGE);
  EXPECT(lstmlm_detokenize(m, ids, (size_t)LSTMLM_MAX_BATCH + 1, buf, sizeof buf, &needed), LSTMLM_ERR_USAGE);
}

/* Tokens of a text (malloc'ed, *n set). */
static int32_t* tokens_of(const lstmlm_model* m, const char* text, size_t* n) {
  int32_t* ids;
  EXPECT(lstmlm_tokenize(m, text, strlen(text), NULL, 0, n), LSTMLM_OK);
  ids = xmalloc(*n * sizeof *ids);
  EXPECT(lstmlm_tokenize(m, text, strlen(text), ids, *n, n), LSTMLM_OK);
  return ids;
}

/* The top-k of two states are the same ids and log-probs, by descending ln p, ties by id. */
static void check_same_top(const lstmlm_model* m, const lstmlm_state* a, const lstmlm_state* b, size_t k) {
  int32_t ia[16], ib[16];
  float la[16], lb[16];
  size_t na = 0, nb = 0, i;
  EXPECT(lstmlm_state_top(m, a, k, ia, la, &na), LSTMLM_OK);
  EXPECT(lstmlm_state_top(m, b, k, ib, lb, &nb), LSTMLM_OK);
  CHECK(na == k && nb == k);
  CHECK(memcmp(ia, ib, k * sizeof *ia) == 0 && memcmp(la, lb, k * sizeof *la) == 0);
  for (i = 1; i < k; ++i) CHECK(la[i - 1] > la[i] || (la[i - 1] == la[i] && ia[i - 1] < ia[i]));
}

enum { kStreams = 3 };

/* Three states with different contexts stepped together (one lstmlm_step_batch per step, over the states
 * that still have a token: 3, then 2, then 1 rows), against the same states stepped alone and against the
 * batch in reversed order: every number bit for bit. */
static void test_batch_equals_alone(const lstmlm_model* m) {
  const char* texts[kStreams] = {"the old man went to the mountains to cut wood .",
                                 "once upon a time there lived a princess", "the fox and the badger"};
  const int bos[kStreams] = {1, 1, 0};
  int32_t* ids[kStreams];
  size_t len[kStreams], longest = 0, t, i;
  lstmlm_state *batched[kStreams], *alone[kStreams], *reversed[kStreams];
  int32_t v = 0;
  float *rows, *rows_rev, *row_alone, *all;
  printf("batch of %d against each state alone\n", kStreams);
  EXPECT(lstmlm_model_vocab_size(m, &v), LSTMLM_OK);
  rows = xmalloc(kStreams * (size_t)v * sizeof(float));
  rows_rev = xmalloc(kStreams * (size_t)v * sizeof(float));
  row_alone = xmalloc((size_t)v * sizeof(float));
  all = xmalloc((size_t)v * sizeof(float));
  for (i = 0; i < kStreams; ++i) {
    ids[i] = tokens_of(m, texts[i], &len[i]);
    if (len[i] > longest) longest = len[i];
    EXPECT(lstmlm_state_new(m, bos[i], &batched[i]), LSTMLM_OK);
    EXPECT(lstmlm_state_new(m, bos[i], &alone[i]), LSTMLM_OK);
    EXPECT(lstmlm_state_new(m, bos[i], &reversed[i]), LSTMLM_OK);
  }
  CHECK(len[0] == 11 && len[1] == 8 && len[2] == 5);
  for (t = 0; t < longest; ++t) {
    lstmlm_state* step_states[kStreams];
    lstmlm_state* rev_states[kStreams];
    int32_t step_tokens[kStreams], rev_tokens[kStreams];
    size_t n = 0, r;
    for (i = 0; i < kStreams; ++i) {
      if (t >= len[i]) continue;
      step_states[n] = batched[i];
      step_tokens[n] = ids[i][t];
      ++n;
    }
    for (r = 0; r < n; ++r) {
      /* The row the batch is about to score: the same ln p in the batched and the lone state. */
      float lb = 1, la = 2;
      size_t s = 0;
      for (i = 0; i < kStreams; ++i)
        if (batched[i] == step_states[r]) s = i;
      EXPECT(lstmlm_state_logprob(m, batched[s], ids[s][t], &lb), LSTMLM_OK);
      EXPECT(lstmlm_state_logprob(m, alone[s], ids[s][t], &la), LSTMLM_OK);
      CHECK(memcmp(&lb, &la, sizeof lb) == 0 && lb < 0);
      rev_states[n - 1 - r] = reversed[s];
      rev_tokens[n - 1 - r] = ids[s][t];
    }
    EXPECT(lstmlm_step_batch(m, step_states, step_tokens, n, rows), LSTMLM_OK);
    EXPECT(lstmlm_step_batch(m, rev_states, rev_tokens, n, rows_rev), LSTMLM_OK);
    for (r = 0; r < n; ++r) {
      size_t s = 0;
      double total = 0;
      int32_t j;
      for (i = 0; i < kStreams; ++i)
        if (batched[i] == step_states[r]) s = i;
      EXPECT(lstmlm_step_batch(m, &alone[s], &ids[s][t], 1, row_alone), LSTMLM_OK);
      CHECK(memcmp(rows + r * (size_t)v, row_alone, (size_t)v * sizeof(float)) == 0);
      CHECK(memcmp(rows_rev + (n - 1 - r) * (size_t)v, row_alone, (size_t)v * sizeof(float)) == 0);
      /* The kept distribution is the row written. */
      EXPECT(lstmlm_state_logprobs(m, batched[s], all, (size_t)v), LSTMLM_OK);
      CHECK(memcmp(all, row_alone, (size_t)v * sizeof(float)) == 0);
      for (j = 0; j < v; ++j) total += exp((double)all[j]);
      CHECK(fabs(total - 1.0) < 1e-4);
      CHECK(same_bytes(batched[s], alone[s]));
      CHECK(same_bytes(reversed[s], alone[s]));
      check_same_top(m, batched[s], alone[s], 10);
    }
  }
  for (i = 0; i < kStreams; ++i) {
    int eq = 0;
    EXPECT(lstmlm_state_equal(batched[i], alone[i], &eq), LSTMLM_OK);
    CHECK(eq == 1);
    EXPECT(lstmlm_state_equal(batched[i], batched[(i + 1) % kStreams], &eq), LSTMLM_OK);
    CHECK(eq == 0);
  }
  for (i = 0; i < kStreams; ++i) {
    lstmlm_state_free(batched[i]);
    lstmlm_state_free(alone[i]);
    lstmlm_state_free(reversed[i]);
    free(ids[i]);
  }
  free(rows);
  free(rows_rev);
  free(row_alone);
  free(all);
}

/* The begin-of-sentence state is the empty state stepped through the start token; a state after "the old
 * man" has the top candidates `lstmlm predict` gives (checked against the CLI by test_capi_ctypes.py). */
static void test_new_and_top(const lstmlm_model* m) {
  lstmlm_state *bos = NULL, *empty = NULL;
  int32_t start = -1, v = 0, ids[4], *all_ids;
  float lps[4], *all_lps, first = 0, max;
  size_t n = 0, i;
  int eq = 1;
  printf("states and top candidates\n");
  EXPECT(lstmlm_model_vocab_size(m, &v), LSTMLM_OK);
  EXPECT(lstmlm_model_special_tokens(m, &start, NULL, NULL), LSTMLM_OK);
  EXPECT(lstmlm_state_new(m, 1, &bos), LSTMLM_OK);
  EXPECT(lstmlm_state_new(m, 0, &empty), LSTMLM_OK);
  EXPECT(lstmlm_state_equal(bos, empty, &eq), LSTMLM_OK);
  CHECK(eq == 0);
  EXPECT(lstmlm_step_batch(m, &empty, &start, 1, NULL), LSTMLM_OK);
  CHECK(same_bytes(bos, empty));

  EXPECT(lstmlm_state_top(m, bos, 0, NULL, NULL, &n), LSTMLM_OK);
  CHECK(n == 0);
  EXPECT(lstmlm_state_top(m, bos, 3, ids, NULL, &n), LSTMLM_OK);
  CHECK(n == 3);
  all_ids = xmalloc((size_t)v * sizeof *all_ids);
  all_lps = xmalloc((size_t)v * sizeof *all_lps);
  EXPECT(lstmlm_state_top(m, bos, 1000000, all_ids, all_lps, &n), LSTMLM_OK);
  CHECK(n == (size_t)v);
  CHECK(memcmp(ids, all_ids, 3 * sizeof *ids) == 0);
  max = all_lps[0];
  for (i = 1; i < n; ++i) CHECK(all_lps[i - 1] >= all_lps[i]);
  EXPECT(lstmlm_state_logprob(m, bos, all_ids[0], &first), LSTMLM_OK);
  CHECK(first == max);
  EXPECT(lstmlm_state_top(m, bos, 4, ids, lps, &n), LSTMLM_OK);
  CHECK(memcmp(lps, all_lps, 4 * sizeof *lps) == 0);
  printf("  after the start token: %d %.9g, %d %.9g, %d %.9g\n", ids[0], lps[0], ids[1], lps[1], ids[2],
         lps[2]);
  free(all_ids);
  free(all_lps);
  lstmlm_state_free(bos);
  lstmlm_state_free(empty);
}

/* Serialize / deserialize: the same state, bytes and numbers; every truncation, a trailing byte, another
 * magic, version or shape is LSTMLM_ERR_INPUT. */
static void test_serialize(const lstmlm_model* m, const lstmlm_model* same_dir, const lstmlm_model* chars) {
  lstmlm_state *s = NULL, *back = NULL, *other = NULL, *t1, *t2;
  int32_t toks[3] = {2, 78, 126};
  unsigned char *bytes, *copy, *again, *small;
  size_t size = 0, size2 = 0, needed = 0, cut, truncations_ok = 0;
  int eq = 0;
  float a = 0, b = 0;
  lstmlm_state* states[1];
  printf("serialize and deserialize\n");
  EXPECT(lstmlm_state_new(m, 1, &s), LSTMLM_OK);
  states[0] = s;
  for (cut = 0; cut < 3; ++cut) EXPECT(lstmlm_step_batch(m, states, &toks[cut], 1, NULL), LSTMLM_OK);
  bytes = bytes_of(s, &size);
  /* 20-byte header, one layer's widths, h and c of 100 floats, next of 554 */
  CHECK(size == 36 + 8 + 4 * (100 + 100 + 554));
  CHECK(memcmp(bytes, "LSTMLMST", 8) == 0);
  EXPECT(lstmlm_state_deserialize(m, bytes, size, &back), LSTMLM_OK);
  EXPECT(lstmlm_state_equal(s, back, &eq), LSTMLM_OK);
  CHECK(eq == 1);
  again = bytes_of(back, &size2);
  CHECK(size2 == size && memcmp(bytes, again, size) == 0);
  free(again);
  EXPECT(lstmlm_state_logprob(m, s, 4, &a), LSTMLM_OK);
  EXPECT(lstmlm_state_logprob(m, back, 4, &b), LSTMLM_OK);
  CHECK(memcmp(&a, &b, sizeof a) == 0);
  /* Both step on alike. */
  EXPECT(lstmlm_state_clone(s, &t1), LSTMLM_OK);
  EXPECT(lstmlm_state_clone(back, &t2), LSTMLM_OK);
  states[0] = t1;
  EXPECT(lstmlm_step_batch(m, states, &toks[0], 1, NULL), LSTMLM_OK);
  states[0] = t2;
  EXPECT(lstmlm_step_batch(m, states, &toks[0], 1, NULL), LSTMLM_OK);
  CHECK(same_bytes(t1, t2));
  CHECK(!same_bytes(t1, s)); /* the clone is its own state */
  lstmlm_state_free(t1);
  lstmlm_state_free(t2);

  /* A buffer too small is left as it was. */
  small = xmalloc(size);
  memset(small, 0xab, size);
  EXPECT(lstmlm_state_serialize(s, small, size - 1, &needed), LSTMLM_OK);
  CHECK(needed == size && small[0] == 0xab && small[size - 2] == 0xab);
  free(small);

  /* Every truncation. */
  copy = xmalloc(size + 1);
  for (cut = 0; cut < size; ++cut) {
    lstmlm_state* x = NULL;
    memcpy(copy, bytes, cut);
    if (lstmlm_state_deserialize(m, cut ? copy : NULL, cut, &x) == LSTMLM_ERR_INPUT && x == NULL &&
        lstmlm_last_error()[0] != '\0')
      ++truncations_ok;
    else
      fprintf(stderr, "a state truncated to %zu bytes: \"%s\"\n", cut, lstmlm_last_error());
    lstmlm_state_free(x);
  }
  CHECK(truncations_ok == size);
  EXPECT(lstmlm_state_deserialize(m, bytes, size / 2, &other), LSTMLM_ERR_INPUT);
  memcpy(copy, bytes, size);
  copy[size] = 0;
  EXPECT(lstmlm_state_deserialize(m, copy, size + 1, &other), LSTMLM_ERR_INPUT);
  copy[0] = 'X';
  EXPECT(lstmlm_state_deserialize(m, copy, size, &other), LSTMLM_ERR_INPUT);
  copy[0] = 'L';
  copy[8] = 3; /* a newer format */
  EXPECT(lstmlm_state_deserialize(m, copy, size, &other), LSTMLM_ERR_INPUT);
  copy[8] = 2;
  copy[12] ^= 1; /* another model's fingerprint */
  EXPECT(lstmlm_state_deserialize(m, copy, size, &other), LSTMLM_ERR_INPUT);
  copy[12] ^= 1;
  copy[36] = 99; /* layer 0's h width */
  EXPECT(lstmlm_state_deserialize(m, copy, size, &other), LSTMLM_ERR_INPUT);
  copy[36] = 100;
  copy[28] = 0xff; /* 255 layers */
  EXPECT(lstmlm_state_deserialize(m, copy, size, &other), LSTMLM_ERR_INPUT);
  copy[28] = 1;
  memcpy(copy + size - 4, "\0\0\xc0\x7f", 4); /* a NaN in next */
  EXPECT(lstmlm_state_deserialize(m, copy, size, &other), LSTMLM_ERR_INPUT);
  memcpy(copy + size - 4, bytes + size - 4, 4);
  EXPECT(lstmlm_state_deserialize(m, copy, size, &other), LSTMLM_OK);
  lstmlm_state_free(other);
  other = NULL;
  /* Another model's shape (2 layers of 128, V 103). */
  EXPECT(lstmlm_state_deserialize(chars, bytes, size, &other), LSTMLM_ERR_INPUT);
  CHECK(other == NULL);
  EXPECT(lstmlm_state_deserialize(m, NULL, size, &other), LSTMLM_ERR_USAGE);
  EXPECT(lstmlm_state_deserialize(NULL, bytes, size, &other), LSTMLM_ERR_USAGE);
  EXPECT(lstmlm_state_deserialize(m, bytes, size, NULL), LSTMLM_ERR_USAGE);
  EXPECT(lstmlm_state_serialize(NULL, NULL, 0, &needed), LSTMLM_ERR_USAGE);
  EXPECT(lstmlm_state_serialize(s, NULL, 0, NULL), LSTMLM_ERR_USAGE);
  EXPECT(lstmlm_state_serialize(s, NULL, 10, &needed), LSTMLM_ERR_USAGE);

  /* Into another model of the same shape: a state of that model, with the same numbers. */
  EXPECT(lstmlm_state_deserialize(same_dir, bytes, size, &other), LSTMLM_OK);
  EXPECT(lstmlm_state_logprob(same_dir, other, 4, &b), LSTMLM_OK);
  CHECK(memcmp(&a, &b, sizeof a) == 0);
  EXPECT(lstmlm_state_equal(s, other, &eq), LSTMLM_OK);
  CHECK(eq == 1);
  lstmlm_state_free(other);
  free(copy);
  free(bytes);
  lstmlm_state_free(back);
  lstmlm_state_free(s);
}

/* Bad arguments: an error status with a message, and nothing changed. */
static void test_bad_input(const lstmlm_model* m, const lstmlm_model* same_dir, const lstmlm_model* chars) {
  lstmlm_state *a = NULL, *b = NULL, *foreign = NULL, *foreign_chars = NULL, *out = NULL;
  lstmlm_state* states[3];
  int32_t tokens[3] = {2, 78, 126};
  unsigned char *before_a, *before_b;
  size_t size_a = 0, size_b = 0, n = 0;
  float lp = 0, sentinel[2 * 554];
  int32_t id = 0;
  int eq = 0;
  printf("bad input\n");
  EXPECT(lstmlm_state_new(m, 1, &a), LSTMLM_OK);
  EXPECT(lstmlm_state_new(m, 0, &b), LSTMLM_OK);
  EXPECT(lstmlm_state_new(same_dir, 1, &foreign), LSTMLM_OK);
  EXPECT(lstmlm_state_new(chars, 1, &foreign_chars), LSTMLM_OK);
  before_a = bytes_of(a, &size_a);
  before_b = bytes_of(b, &size_b);
  sentinel[0] = 42;

  EXPECT(lstmlm_state_new(NULL, 1, &out), LSTMLM_ERR_USAGE);
  EXPECT(lstmlm_state_new(m, 1, NULL), LSTMLM_ERR_USAGE);
  EXPECT(lstmlm_state_clone(NULL, &out), LSTMLM_ERR_USAGE);
  EXPECT(lstmlm_state_clone(a, NULL), LSTMLM_ERR_USAGE);
  EXPECT(lstmlm_state_equal(a, NULL, &eq), LSTMLM_ERR_USAGE);
  EXPECT(lstmlm_state_equal(a, b, NULL), LSTMLM_ERR_USAGE);
  CHECK(out == NULL);

  /* n = 0: nothing to do; absurd n: refused before the arrays are read. */
  EXPECT(lstmlm_step_batch(m, NULL, NULL, 0, NULL), LSTMLM_OK);
  states[0] = a;
  EXPECT(lstmlm_step_batch(m, states, tokens, (size_t)LSTMLM_MAX_BATCH + 1, sentinel), LSTMLM_ERR_USAGE);
  EXPECT(lstmlm_step_batch(m, states, tokens, (size_t)-1, sentinel), LSTMLM_ERR_USAGE);
  EXPECT(lstmlm_step_batch(NULL, states, tokens, 1, sentinel), LSTMLM_ERR_USAGE);
  EXPECT(lstmlm_step_batch(m, NULL, tokens, 1, sentinel), LSTMLM_ERR_USAGE);
  EXPECT(lstmlm_step_batch(m, states, NULL, 1, sentinel), LSTMLM_ERR_USAGE);
  states[1] = NULL;
  EXPECT(lstmlm_step_batch(m, states, tokens, 2, sentinel), LSTMLM_ERR_USAGE);
  /* a state of another model: one loaded from the same directory, and one of another shape */
  states[1] = foreign;
  EXPECT(lstmlm_step_batch(m, states, tokens, 2, sentinel), LSTMLM_ERR_USAGE);
  states[1] = foreign_chars;
  EXPECT(lstmlm_step_batch(m, states, tokens, 2, sentinel), LSTMLM_ERR_USAGE);
  /* the same state twice */
  states[1] = b;
  states[2] = a;
  EXPECT(lstmlm_step_batch(m, states, tokens, 3, sentinel), LSTMLM_ERR_USAGE);
  /* token ids outside [0, V) */
  tokens[1] = 554;
  EXPECT(lstmlm_step_batch(m, states, tokens, 2, sentinel), LSTMLM_ERR_INPUT);
  tokens[1] = -1;
  EXPECT(lstmlm_step_batch(m, states, tokens, 2, sentinel), LSTMLM_ERR_INPUT);
  tokens[1] = 78;
  /* none of it changed a state or the output */
  CHECK(sentinel[0] == 42);
  {
    size_t size = 0;
    unsigned char* now = bytes_of(a, &size);
    CHECK(size == size_a && memcmp(now, before_a, size) == 0);
    free(now);
    now = bytes_of(b, &size);
    CHECK(size == size_b && memcmp(now, before_b, size) == 0);
    free(now);
  }
  /* and the same call with good arguments works; the message is cleared */
  EXPECT(lstmlm_step_batch(m, states, tokens, 2, sentinel), LSTMLM_OK);
  CHECK(lstmlm_last_error()[0] == '\0');

  EXPECT(lstmlm_state_logprob(m, a, 554, &lp), LSTMLM_ERR_INPUT);
  EXPECT(lstmlm_state_logprob(m, a, -5, &lp), LSTMLM_ERR_INPUT);
  EXPECT(lstmlm_state_logprob(m, a, 4, NULL), LSTMLM_ERR_USAGE);
  EXPECT(lstmlm_state_logprob(m, NULL, 4, &lp), LSTMLM_ERR_USAGE);
  EXPECT(lstmlm_state_logprob(m, foreign, 4, &lp), LSTMLM_ERR_USAGE);
  EXPECT(lstmlm_state_logprob(chars, a, 4, &lp), LSTMLM_ERR_USAGE);
  EXPECT(lstmlm_state_logprobs(m, a, sentinel, 553), LSTMLM_ERR_USAGE);
  EXPECT(lstmlm_state_logprobs(m, a, NULL, 554), LSTMLM_ERR_USAGE);
  EXPECT(lstmlm_state_top(m, a, 3, NULL, NULL, &n), LSTMLM_ERR_USAGE);
  EXPECT(lstmlm_state_top(m, a, 1, &id, NULL, NULL), LSTMLM_ERR_USAGE);
  EXPECT(lstmlm_state_top(m, foreign, 1, &id, NULL, &n), LSTMLM_ERR_USAGE);
  EXPECT(lstmlm_state_top(NULL, a, 1, &id, NULL, &n), LSTMLM_ERR_USAGE);

  lstmlm_state_free(NULL);
  free(before_a);
  free(before_b);
  lstmlm_state_free(a);
  lstmlm_state_free(b);
  lstmlm_state_free(foreign);
  lstmlm_state_free(foreign_chars);
}

/* A state outlives its model: it can still be serialized and freed; using it with a new model is refused. */
static void test_state_after_model(const char* path, const lstmlm_model* m) {
  lstmlm_model* gone = load(path);
  lstmlm_state* s = NULL;
  unsigned char* bytes;
  size_t size = 0;
  float lp = 0;
  printf("a state after its model is freed\n");
  EXPECT(lstmlm_state_new(gone, 1, &s), LSTMLM_OK);
  lstmlm_model_free(gone);
  bytes = bytes_of(s, &size);
  CHECK(size > 0);
  EXPECT(lstmlm_state_logprob(m, s, 4, &lp), LSTMLM_ERR_USAGE);
  free(bytes);
  lstmlm_state_free(s);
}

/* Four threads share one model, each stepping three states of its own in batches (32 steps, a token
 * sequence of its own); each thread's log-probs and final states equal the same work done on one thread. */
enum { kThreads = 4, kThreadStates = 3, kThreadSteps = 32 };

struct thread_work {
  const lstmlm_model* model;
  int seed;
  float logprobs[kThreadSteps][kThreadStates];
  unsigned char* bytes[kThreadStates];
  size_t sizes[kThreadStates];
  int errors;
};

static void* thread_run(void* arg) {
  struct thread_work* w = arg;
  lstmlm_state* states[kThreadStates] = {NULL, NULL, NULL};
  int32_t tokens[kThreadStates];
  int t, i;
  for (i = 0; i < kThreadStates; ++i)
    w->errors += lstmlm_state_new(w->model, i != 2, &states[i]) != LSTMLM_OK;
  for (t = 0; t < kThreadSteps && w->errors == 0; ++t) {
    for (i = 0; i < kThreadStates; ++i) {
      tokens[i] = (int32_t)((w->seed * 131 + t * 17 + i * 7) % 554);
      w->errors += lstmlm_state_logprob(w->model, states[i], tokens[i], &w->logprobs[t][i]) != LSTMLM_OK;
    }
    w->errors += lstmlm_step_batch(w->model, states, tokens, kThreadStates, NULL) != LSTMLM_OK;
  }
  for (i = 0; i < kThreadStates; ++i) {
    size_t needed = 0;
    w->bytes[i] = NULL;
    if (states[i] != NULL && lstmlm_state_serialize(states[i], NULL, 0, &needed) == LSTMLM_OK &&
        (w->bytes[i] = malloc(needed)) != NULL)
      w->errors += lstmlm_state_serialize(states[i], w->bytes[i], needed, &w->sizes[i]) != LSTMLM_OK;
    else
      ++w->errors;
    lstmlm_state_free(states[i]);
  }
  return NULL;
}

static void test_threads(const lstmlm_model* m) {
  static struct thread_work alone[kThreads], together[kThreads];
  pthread_t threads[kThreads];
  int k, i;
  printf("%d threads sharing the model\n", kThreads);
  for (k = 0; k < kThreads; ++k) {
    alone[k].model = together[k].model = m;
    alone[k].seed = together[k].seed = k + 1;
    alone[k].errors = together[k].errors = 0;
    thread_run(&alone[k]);
  }
  for (k = 0; k < kThreads; ++k) CHECK(pthread_create(&threads[k], NULL, thread_run, &together[k]) == 0);
  for (k = 0; k < kThreads; ++k) CHECK(pthread_join(threads[k], NULL) == 0);
  for (k = 0; k < kThreads; ++k) {
    CHECK(alone[k].errors == 0 && together[k].errors == 0);
    CHECK(memcmp(alone[k].logprobs, together[k].logprobs, sizeof alone[k].logprobs) == 0);
    for (i = 0; i < kThreadStates; ++i) {
      CHECK(alone[k].sizes[i] == together[k].sizes[i] && alone[k].bytes[i] != NULL &&
            together[k].bytes[i] != NULL &&
            memcmp(alone[k].bytes[i], together[k].bytes[i], alone[k].sizes[i]) == 0);
      free(alone[k].bytes[i]);
      free(together[k].bytes[i]);
    }
  }
  CHECK(memcmp(alone[0].logprobs, alone[1].logprobs, sizeof alone[0].logprobs) != 0);
}

/* A keystroke: lstmlm_state_complete against a scan of the whole kept distribution written here (the words
 * starting with the prefix, ranked by ln p then id), with and without a boost, and its bad input. */
static void test_complete(lstmlm_model* m, lstmlm_model* chars) {
  const char* words[] = {"once", "upon", "a", "time", "there", "was", "a"};
  const char* boosts = "# boosts\nking\t2.5\na king\t1\n";
  lstmlm_state *s = NULL, *other = NULL;
  lstmlm_boost *b = NULL, *foreign = NULL;
  int32_t ids[8], history[7], want[8], v = 0, id;
  float lps[8], *row = NULL;
  size_t n = 0, i, size = 0;
  int w;
  EXPECT(lstmlm_state_new(m, 1, &s), LSTMLM_OK);
  for (w = 0; w < 7; ++w) {
    EXPECT(lstmlm_model_token_id(m, words[w], &history[w]), LSTMLM_OK);
    EXPECT(lstmlm_step_batch(m, &s, &history[w], 1, NULL), LSTMLM_OK);
  }
  EXPECT(lstmlm_model_vocab_size(m, &v), LSTMLM_OK);
  row = (float*)xmalloc((size_t)v * sizeof *row);
  EXPECT(lstmlm_state_logprobs(m, s, row, (size_t)v), LSTMLM_OK);
  /* The reference: the 5 best ids whose token starts with "k" (special tokens and unk excluded). */
  for (i = 0; i < 5; ++i) {
    want[i] = -1;
    for (id = 0; id < v; ++id) {
      const char* text = NULL;
      size_t len = 0, j;
      int taken = 0;
      EXPECT(lstmlm_model_token(m, id, &text, &len), LSTMLM_OK);
      if (len == 0 || text[0] != 'k') continue;
      for (j = 0; j < i; ++j) taken |= want[j] == id;
      if (!taken && (want[i] < 0 || row[id] > row[want[i]])) want[i] = id;
    }
  }
  EXPECT(lstmlm_state_complete(m, s, "k", 1, NULL, NULL, 0, 5, ids, lps, &n), LSTMLM_OK);
  CHECK(n >= 1 && n <= 5);
  for (i = 0; i < n; ++i) CHECK(ids[i] == want[i] && lps[i] == row[want[i]]);
  /* An empty prefix is lstmlm_state_top. */
  {
    int32_t top[3];
    size_t nt = 0;
    EXPECT(lstmlm_state_top(m, s, 3, top, NULL, &nt), LSTMLM_OK);
    EXPECT(lstmlm_state_complete(m, s, "", 0, NULL, NULL, 0, 3, ids, NULL, &n), LSTMLM_OK);
    CHECK(n == 3 && nt == 3 && memcmp(top, ids, sizeof top) == 0);
  }
  /* Boosted: king gains 2.5 + 1 after "... a" and leads the "k" words. */
  EXPECT(lstmlm_boost_parse(m, boosts, strlen(boosts), &b), LSTMLM_OK);
  EXPECT(lstmlm_boost_size(b, &size), LSTMLM_OK);
  CHECK(size == 2);
  EXPECT(lstmlm_state_complete(m, s, "k", 1, b, history, 7, 1, ids, lps, &n), LSTMLM_OK);
  EXPECT(lstmlm_model_token_id(m, "king", &id), LSTMLM_OK);
  CHECK(n == 1 && ids[0] == id && lps[0] > row[id]);
  /* Bad input: a status and a message, never a crash. */
  EXPECT(lstmlm_state_complete(NULL, s, "k", 1, NULL, NULL, 0, 1, ids, lps, &n), LSTMLM_ERR_USAGE);
  EXPECT(lstmlm_state_complete(m, NULL, "k", 1, NULL, NULL, 0, 1, ids, lps, &n), LSTMLM_ERR_USAGE);
  EXPECT(lstmlm_state_complete(m, s, NULL, 1, NULL, NULL, 0, 1, ids, lps, &n), LSTMLM_ERR_USAGE);
  EXPECT(lstmlm_state_complete(m, s, "k", 1, NULL, NULL, 0, 1, NULL, lps, &n), LSTMLM_ERR_USAGE);
  EXPECT(lstmlm_state_complete(m, s, "k", 1, NULL, NULL, 0, 1, ids, lps, NULL), LSTMLM_ERR_USAGE);
  EXPECT(lstmlm_state_complete(m, s, "k", 1, b, NULL, 3, 1, ids, lps, &n), LSTMLM_ERR_USAGE);
  history[0] = v;
  EXPECT(lstmlm_state_complete(m, s, "k", 1, b, history, 7, 1, ids, lps, &n), LSTMLM_ERR_INPUT);
  EXPECT(lstmlm_boost_parse(chars, "a\t1", 3, &foreign), LSTMLM_OK);
  EXPECT(lstmlm_state_complete(m, s, "k", 1, foreign, NULL, 0, 1, ids, lps, &n), LSTMLM_ERR_USAGE);
  CHECK(strstr(lstmlm_last_error(), "another model") != NULL);
  lstmlm_boost_free(foreign);
  foreign = NULL;
  EXPECT(lstmlm_state_new(chars, 1, &other), LSTMLM_OK);
  EXPECT(lstmlm_state_complete(chars, other, "k", 1, NULL, NULL, 0, 1, ids, lps, &n), LSTMLM_ERR_USAGE);
  EXPECT(lstmlm_boost_parse(m, "king 2", 6, &foreign), LSTMLM_ERR_INPUT);
  CHECK(foreign == NULL && strstr(lstmlm_last_error(), "<boost>:1:") != NULL);
  EXPECT(lstmlm_boost_load(m, "/no/such/boost.tsv", &foreign), LSTMLM_ERR_INPUT);
  EXPECT(lstmlm_boost_load(m, NULL, &foreign), LSTMLM_ERR_USAGE);
  EXPECT(lstmlm_boost_size(NULL, &size), LSTMLM_ERR_USAGE);
  lstmlm_boost_free(NULL);
  lstmlm_boost_free(b);
  lstmlm_state_free(s);
  lstmlm_state_free(other);
  free(row);
}

/* Mixing with an ARPA model (test.arpa of KenLM's tests): the row sums to 1 (its numbers are checked
 * against `lstmlm predict --mix` in tests/py/module/test_capi_ctypes.py), and every misuse is a status. */
static void test_mix(const lstmlm_model* m, const lstmlm_model* chars, const char* arpa) {
  char spec[4096], bad[4096];
  const char* specs[1];
  lstmlm_mix *mix = NULL, *none = NULL;
  lstmlm_state *s = NULL, *other = NULL;
  int32_t v = 0, history[2] = {0, 0}, n_ids = 0;
  size_t n = 0, i;
  float* row;
  double sum = 0;
  printf("mixing with %s\n", arpa);
  snprintf(spec, sizeof spec, "%s:0.3", arpa);
  specs[0] = spec;
  EXPECT(lstmlm_model_vocab_size(m, &v), LSTMLM_OK);
  EXPECT(lstmlm_mix_load(m, specs, 1, NULL, &mix), LSTMLM_OK);
  EXPECT(lstmlm_state_new(m, 1, &s), LSTMLM_OK);
  EXPECT(lstmlm_tokenize(m, "once upon", 9, history, 2, &n), LSTMLM_OK);
  n_ids = (int32_t)n;
  CHECK(n_ids == 2);
  EXPECT(lstmlm_step_batch(m, &s, &history[0], 1, NULL), LSTMLM_OK);
  EXPECT(lstmlm_step_batch(m, &s, &history[1], 1, NULL), LSTMLM_OK);
  row = xmalloc((size_t)v * sizeof *row);
  EXPECT(lstmlm_mix_logprobs(mix, s, history, 2, 1, row, (size_t)v), LSTMLM_OK);
  for (i = 0; i < (size_t)v; ++i) sum += exp(row[i]);
  CHECK(fabs(sum - 1) < 1e-5);
  EXPECT(lstmlm_mix_logprobs(mix, s, history, 2, 1, row, (size_t)v - 1), LSTMLM_ERR_USAGE);
  EXPECT(lstmlm_mix_logprobs(mix, s, NULL, 2, 1, row, (size_t)v), LSTMLM_ERR_USAGE);
  EXPECT(lstmlm_mix_logprobs(NULL, s, history, 2, 1, row, (size_t)v), LSTMLM_ERR_USAGE);
  EXPECT(lstmlm_mix_logprobs(mix, NULL, history, 2, 1, row, (size_t)v), LSTMLM_ERR_USAGE);
  history[0] = v;
  EXPECT(lstmlm_mix_logprobs(mix, s, history, 2, 1, row, (size_t)v), LSTMLM_ERR_INPUT);
  EXPECT(lstmlm_state_new(chars, 1, &other), LSTMLM_OK);
  EXPECT(lstmlm_mix_logprobs(mix, other, NULL, 0, 1, row, (size_t)v), LSTMLM_ERR_USAGE);
  EXPECT(lstmlm_mix_load(chars, specs, 1, NULL, &none), LSTMLM_ERR_USAGE); /* not a word model */
  CHECK(none == NULL);
  EXPECT(lstmlm_mix_load(m, specs, 0, NULL, &none), LSTMLM_ERR_USAGE);
  EXPECT(lstmlm_mix_load(m, specs, 1, "geometric", &none), LSTMLM_ERR_USAGE);
  EXPECT(lstmlm_mix_load(m, NULL, 1, NULL, &none), LSTMLM_ERR_USAGE);
  snprintf(bad, sizeof bad, "%s:1.5", arpa);
  specs[0] = bad;
  EXPECT(lstmlm_mix_load(m, specs, 1, NULL, &none), LSTMLM_ERR_USAGE);
  specs[0] = "/no/such/file.arpa:0.5";
  EXPECT(lstmlm_mix_load(m, specs, 1, NULL, &none), LSTMLM_ERR_USAGE);
  specs[0] = NULL;
  EXPECT(lstmlm_mix_load(m, specs, 1, NULL, &none), LSTMLM_ERR_USAGE);
  CHECK(none == NULL);
  lstmlm_mix_free(NULL);
  lstmlm_mix_free(mix);
  lstmlm_state_free(s);
  lstmlm_state_free(other);
  free(row);
}

/* Beam search: the hypotheses' per-token log-probs are the ones stepping their ids through states gives, the
 * totals their sums, best first; a regex holds; bad options are LSTMLM_ERR_USAGE. */
static void test_beam_search(lstmlm_model* m) {
  lstmlm_search_options o = LSTMLM_SEARCH_OPTIONS_INIT;
  lstmlm_hypotheses* h = NULL;
  const char* allowed[] = {"the", "king", "and", "said"};
  const char* bias_tokens[] = {"king"};
  float bias_values[] = {1.0f};
  size_t count = 0, n = 0, i, t;
  const char* text = NULL;
  const int32_t* ids = NULL;
  const float* lps = NULL;
  double logprob = 0, score = 0, prev = 0;
  o.max_tokens = 8;
  o.beam_size = 4;
  o.n_best = 3;
  EXPECT(lstmlm_beam_search(m, "the king", 8, &o, &h), LSTMLM_OK);
  EXPECT(lstmlm_hypotheses_count(h, &count), LSTMLM_OK);
  CHECK(count == 3);
  for (i = 0; i < count; ++i) {
    lstmlm_state* s = NULL;
    int32_t prompt[2];
    double sum = 0;
    EXPECT(lstmlm_hypothesis(h, i, &text, &ids, &lps, &n, &logprob, &score), LSTMLM_OK);
    CHECK(n >= 1 && n <= 8 && text != NULL);
    CHECK(i == 0 || score <= prev);
    prev = score;
    EXPECT(lstmlm_state_new(m, 1, &s), LSTMLM_OK);
    EXPECT(lstmlm_model_token_id(m, "the", &prompt[0]), LSTMLM_OK);
    EXPECT(lstmlm_model_token_id(m, "king", &prompt[1]), LSTMLM_OK);
    EXPECT(lstmlm_step_batch(m, &s, &prompt[0], 1, NULL), LSTMLM_OK);
    EXPECT(lstmlm_step_batch(m, &s, &prompt[1], 1, NULL), LSTMLM_OK);
    for (t = 0; t < n; ++t) {
      float lp = 0;
      EXPECT(lstmlm_state_logprob(m, s, ids[t], &lp), LSTMLM_OK);
      CHECK(lp == lps[t]); /* the engine is batch-invariant: bit-identical */
      sum += lps[t];
      if (t + 1 < n) EXPECT(lstmlm_step_batch(m, &s, &ids[t], 1, NULL), LSTMLM_OK);
    }
    CHECK(sum == logprob);
    CHECK(score == logprob); /* no length penalty, no bias */
    lstmlm_state_free(s);
  }
  EXPECT(lstmlm_hypothesis(h, 3, &text, NULL, NULL, NULL, NULL, NULL), LSTMLM_ERR_USAGE);
  lstmlm_hypotheses_free(h);
  h = NULL;

  /* Only the allowed words, and a pattern over them, with a bias. */
  o.allowed_words = allowed;
  o.n_allowed_words = 4;
  o.regex = "the (king|and)( said)*";
  o.bias_tokens = bias_tokens;
  o.bias_values = bias_values;
  o.n_bias = 1;
  EXPECT(lstmlm_beam_search(m, NULL, 0, &o, &h), LSTMLM_OK);
  EXPECT(lstmlm_hypothesis(h, 0, &text, NULL, NULL, &n, NULL, NULL), LSTMLM_OK);
  CHECK(strncmp(text, "the king", 8) == 0 || strncmp(text, "the and", 7) == 0);
  lstmlm_hypotheses_free(h);
  h = NULL;
  lstmlm_hypotheses_free(NULL);

  o = (lstmlm_search_options)LSTMLM_SEARCH_OPTIONS_INIT;
  EXPECT(lstmlm_beam_search(NULL, "a", 1, &o, &h), LSTMLM_ERR_USAGE);
  EXPECT(lstmlm_beam_search(m, "a", 1, &o, NULL), LSTMLM_ERR_USAGE);
  EXPECT(lstmlm_beam_search(m, NULL, 3, &o, &h), LSTMLM_ERR_USAGE);
  o.beam_size = 0;
  EXPECT(lstmlm_beam_search(m, "the", 3, &o, &h), LSTMLM_ERR_USAGE);
  o.beam_size = 1000000000;
  EXPECT(lstmlm_beam_search(m, "the", 3, &o, &h), LSTMLM_ERR_USAGE);
  o.beam_size = 2;
  o.n_best = 3;
  EXPECT(lstmlm_beam_search(m, "the", 3, &o, &h), LSTMLM_ERR_USAGE);
  o.n_best = 1;
  o.length_penalty = NAN;
  EXPECT(lstmlm_beam_search(m, "the", 3, &o, &h), LSTMLM_ERR_USAGE);
  o.length_penalty = 0;
  bias_values[0] = INFINITY;
  o.bias_tokens = bias_tokens;
  o.bias_values = bias_values;
  o.n_bias = 1;
  EXPECT(lstmlm_beam_search(m, "the", 3, &o, &h), LSTMLM_ERR_USAGE);
  o.n_bias = 0;
  o.regex = "(the";
  EXPECT(lstmlm_beam_search(m, "the", 3, &o, &h), LSTMLM_ERR_USAGE);
  o.regex = NULL;
  o.struct_size = 8;
  EXPECT(lstmlm_beam_search(m, "the", 3, &o, &h), LSTMLM_ERR_USAGE);
  CHECK(h == NULL);
}

int main(int argc, char** argv) {
  lstmlm_model *m, *same_dir, *chars;
  if (argc != 3 && argc != 4) {
    fprintf(stderr,
            "usage: capi_test WORD_MODEL CHAR_MODEL [ARPA] (models/fairytales-word models/charrnn-space "
            "../shared/data/kenlm-test-arpa/test.arpa)\n");
    return 2;
  }
  test_versions();
  test_load_errors(argv[1]);
  m = load(argv[1]);
  same_dir = load(argv[1]);
  chars = load(argv[2]);
  test_vocabulary(m);
  test_text(m);
  test_batch_equals_alone(m);
  test_new_and_top(m);
  test_serialize(m, same_dir, chars);
  test_bad_input(m, same_dir, chars);
  test_state_after_model(argv[1], m);
  test_threads(m);
  test_complete(m, chars);
  test_beam_search(m);
  if (argc == 4)
    test_mix(m, chars, argv[3]);
  else
    printf("SKIP: mixing (no ARPA file given)\n");
  lstmlm_model_free(m);
  lstmlm_model_free(same_dir);
  lstmlm_model_free(chars);
  printf("%d checks, %d failed\n", checks, failures);
  return failures == 0 ? 0 : 1;
}
