/* The C API's tasks as JSON lines (lstmlm_score_jsonl, lstmlm_predict_jsonl and _batch_jsonl,
 * lstmlm_generate_jsonl) from plain C99, against the same model stepped through states (lstmlm_step_batch,
 * lstmlm_state_top): the records hold the stepped log-probabilities and candidates, printed with %.9g as the
 * CLI prints them. Equality with the CLI's own output is checked through the WebAssembly build
 * (tests/wasm/api.test.js).
 *
 *   jsonl_test WORD_MODEL        (models/fairytales-word) */
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

static int lines_of(const char* s) {
  int n = 0;
  for (; *s; ++s) n += *s == '\n';
  return n;
}

/* A state of `m` fed the start token and the ids of `text`. */
static lstmlm_state* stepped(const lstmlm_model* m, const char* text) {
  int32_t ids[64];
  size_t n = 0, i;
  lstmlm_state* s = NULL;
  CHECK(lstmlm_tokenize(m, text, strlen(text), ids, 64, &n) == LSTMLM_OK && n <= 64);
  CHECK(lstmlm_state_new(m, 1, &s) == LSTMLM_OK);
  for (i = 0; i < n; ++i) CHECK(lstmlm_step_batch(m, &s, &ids[i], 1, NULL) == LSTMLM_OK);
  return s;
}

static int32_t id_of(const lstmlm_model* m, const char* token) {
  int32_t id = -1;
  CHECK(lstmlm_model_token_id(m, token, &id) == LSTMLM_OK);
  return id;
}

static void test_score(const lstmlm_model* m) {
  const char* text = "once upon a time\r\nthe king\n";
  char *out = NULL, want[160];
  size_t len = 0;
  float lp = 0;
  lstmlm_state* s;
  CHECK(lstmlm_score_jsonl(m, text, strlen(text), &out, &len) == LSTMLM_OK);
  CHECK(out != NULL && len == strlen(out));
  if (out == NULL) return;
  CHECK(lines_of(out) == 3); /* two lines, the summary */
  CHECK(strncmp(out, "{\"type\": \"line\", \"file\": \"-\", \"line\": 1,", 39) == 0);
  CHECK(strstr(out, "\"type\": \"summary\"") != NULL);
  /* "upon" after "<eos> once", and "king" after "<eos> the", as states stepped one token at a time. */
  s = stepped(m, "once");
  CHECK(lstmlm_state_logprob(m, s, id_of(m, "upon"), &lp) == LSTMLM_OK);
  snprintf(want, sizeof want, "{\"token\": \"upon\", \"id\": %d, \"oov\": false, \"logprob\": %.9g,",
           (int)id_of(m, "upon"), (double)lp);
  CHECK(strstr(out, want) != NULL);
  lstmlm_state_free(s);
  s = stepped(m, "the");
  CHECK(lstmlm_state_logprob(m, s, id_of(m, "king"), &lp) == LSTMLM_OK);
  snprintf(want, sizeof want, "\"logprob\": %.9g,", (double)lp);
  CHECK(strstr(strchr(out, '\n'), want) != NULL); /* on the second line */
  lstmlm_state_free(s);
  lstmlm_string_free(out);
  /* Empty text: the summary alone. */
  CHECK(lstmlm_score_jsonl(m, NULL, 0, &out, NULL) == LSTMLM_OK);
  CHECK(out != NULL && lines_of(out) == 1 && strstr(out, "\"sentences\": 0") != NULL);
  lstmlm_string_free(out);
}

static void test_predict(const lstmlm_model* m) {
  char* out = NULL;
  char want[160];
  int32_t ids[3];
  float lps[3];
  size_t n = 0, i;
  const char* at;
  lstmlm_state* s = stepped(m, "once upon a");
  CHECK(lstmlm_predict_jsonl(m, "once upon a", 11, 3, NULL, 0, &out, NULL) == LSTMLM_OK);
  CHECK(lstmlm_state_top(m, s, 3, ids, lps, &n) == LSTMLM_OK && n == 3);
  CHECK(out != NULL && lines_of(out) == 1);
  if (out == NULL) return;
  CHECK(strncmp(out, "{\"type\": \"prediction\", \"context\": \"once upon a\",", 48) == 0);
  /* The candidates in the stepped state's order, with its log-probabilities. */
  at = out;
  for (i = 0; i < n && at != NULL; ++i) {
    snprintf(want, sizeof want, "\"id\": %d, \"prob\":", (int)ids[i]);
    at = strstr(at, want);
    CHECK(at != NULL);
    snprintf(want, sizeof want, "\"logprob\": %.9g}", (double)lps[i]);
    CHECK(at != NULL && strstr(at, want) != NULL);
  }
  lstmlm_string_free(out);
  /* A prefix: every candidate starts with it. */
  CHECK(lstmlm_predict_jsonl(m, "once upon a", 11, 2, "ti", 2, &out, NULL) == LSTMLM_OK);
  CHECK(out != NULL && strstr(out, "\"top\": [{\"token\": \"ti") != NULL);
  lstmlm_string_free(out);
  lstmlm_state_free(s);
}

/* A batch of contexts of different lengths, in one call: the records, in order, are the contexts' own
 * lstmlm_predict_jsonl records byte for byte (batch invariance: a context's numbers do not depend on the
 * others). */
static void test_predict_batch(const lstmlm_model* m) {
  const char* contexts[4] = {"once upon a", "the king", "", "the old woman said to the"};
  size_t lens[4], i, len = 0;
  char *out = NULL, *one = NULL;
  char want[8192] = "";
  for (i = 0; i < 4; ++i) {
    lens[i] = strlen(contexts[i]);
    CHECK(lstmlm_predict_jsonl(m, contexts[i], lens[i], 4, NULL, 0, &one, NULL) == LSTMLM_OK);
    if (one != NULL && strlen(want) + strlen(one) < sizeof want) strcat(want, one);
    lstmlm_string_free(one);
  }
  CHECK(lstmlm_predict_batch_jsonl(m, contexts, lens, 4, 4, NULL, 0, &out, &len) == LSTMLM_OK);
  CHECK(out != NULL && lines_of(out) == 4 && len == strlen(want) && strcmp(out, want) == 0);
  lstmlm_string_free(out);
  /* No contexts: no records. */
  CHECK(lstmlm_predict_batch_jsonl(m, NULL, NULL, 0, 4, NULL, 0, &out, &len) == LSTMLM_OK);
  CHECK(out != NULL && len == 0);
  lstmlm_string_free(out);
}

static void test_generate(const lstmlm_model* m) {
  lstmlm_generate_options o = LSTMLM_GENERATE_OPTIONS_INIT;
  char *a = NULL, *b = NULL, *c = NULL;
  int32_t best = -1;
  size_t n = 0;
  lstmlm_state* s = stepped(m, "the king");
  o.max_tokens = 12;
  o.seed = 7;
  CHECK(lstmlm_generate_jsonl(m, "the king", 8, &o, &a, NULL) == LSTMLM_OK);
  CHECK(lstmlm_generate_jsonl(m, "the king", 8, &o, &b, NULL) == LSTMLM_OK);
  o.seed = 8;
  CHECK(lstmlm_generate_jsonl(m, "the king", 8, &o, &c, NULL) == LSTMLM_OK);
  CHECK(a != NULL && b != NULL && c != NULL);
  if (a && b && c) {
    CHECK(strcmp(a, b) == 0); /* the same seed, the same sample */
    CHECK(strcmp(a, c) != 0); /* another seed, another one */
    CHECK(strstr(a, "\"seed\": 7, \"prompt\": \"the king\"") != NULL);
  }
  lstmlm_string_free(a);
  lstmlm_string_free(b);
  lstmlm_string_free(c);
  /* Greedy: the first token is the stepped state's most probable one. */
  o.temperature = 0;
  CHECK(lstmlm_generate_jsonl(m, "the king", 8, &o, &a, NULL) == LSTMLM_OK);
  CHECK(lstmlm_state_top(m, s, 1, &best, NULL, &n) == LSTMLM_OK && n == 1);
  if (a != NULL) {
    const char* first = strstr(a, "\"tokens\": [{");
    const char* id = first ? strstr(first, "\"id\": ") : NULL;
    CHECK(id != NULL && atoi(id + 6) == best);
  }
  lstmlm_string_free(a);
  lstmlm_state_free(s);
}

static void test_errors(const lstmlm_model* m) {
  lstmlm_generate_options o = LSTMLM_GENERATE_OPTIONS_INIT;
  char* out = (char*)"untouched";
  CHECK(lstmlm_score_jsonl(NULL, "x", 1, &out, NULL) == LSTMLM_ERR_USAGE);
  CHECK(lstmlm_score_jsonl(m, "x", 1, NULL, NULL) == LSTMLM_ERR_USAGE);
  CHECK(lstmlm_score_jsonl(m, NULL, 3, &out, NULL) == LSTMLM_ERR_USAGE && out == NULL);
  CHECK(lstmlm_score_jsonl(m, "ok\nbad \xff\n", 8, &out, NULL) == LSTMLM_ERR_INPUT && out == NULL);
  CHECK(strcmp(lstmlm_last_error(), "lstmlm_score_jsonl: -:2: invalid UTF-8 at byte 5") == 0);
  CHECK(lstmlm_predict_jsonl(m, "x", 1, -1, NULL, 0, &out, NULL) == LSTMLM_ERR_USAGE && out == NULL);
  CHECK(strstr(lstmlm_last_error(), "lstmlm_predict_jsonl: top must be >= 0") != NULL);
  CHECK(lstmlm_predict_batch_jsonl(m, NULL, NULL, 2, 3, NULL, 0, &out, NULL) == LSTMLM_ERR_USAGE &&
        out == NULL);
  CHECK(lstmlm_predict_batch_jsonl(m, NULL, NULL, (size_t)LSTMLM_MAX_BATCH + 1, 3, NULL, 0, &out, NULL) ==
        LSTMLM_ERR_USAGE);
  CHECK(strstr(lstmlm_last_error(), "more than LSTMLM_MAX_BATCH") != NULL);
  o.temperature = -1;
  CHECK(lstmlm_generate_jsonl(m, "x", 1, &o, &out, NULL) == LSTMLM_ERR_USAGE && out == NULL);
  CHECK(strstr(lstmlm_last_error(), "temperature") != NULL);
  o = (lstmlm_generate_options)LSTMLM_GENERATE_OPTIONS_INIT;
  o.struct_size = 8;
  CHECK(lstmlm_generate_jsonl(m, "x", 1, &o, &out, NULL) == LSTMLM_ERR_USAGE);
  o = (lstmlm_generate_options)LSTMLM_GENERATE_OPTIONS_INIT;
  o.max_tokens = -3;
  CHECK(lstmlm_generate_jsonl(m, "x", 1, &o, &out, NULL) == LSTMLM_ERR_USAGE);
  CHECK(lstmlm_generate_jsonl(m, "x", 1, NULL, &out, NULL) == LSTMLM_OK && out != NULL);
  CHECK(lstmlm_last_error()[0] == '\0');
  lstmlm_string_free(out);
  lstmlm_string_free(NULL);
}

int main(int argc, char** argv) {
  lstmlm_model* m = NULL;
  lstmlm_model_options mo = LSTMLM_MODEL_OPTIONS_INIT;
  if (argc != 2) {
    fprintf(stderr, "usage: jsonl_test WORD_MODEL (models/fairytales-word)\n");
    return 2;
  }
  mo.threads = 1;
  if (lstmlm_model_load(argv[1], &mo, &m) != LSTMLM_OK) {
    fprintf(stderr, "cannot load %s: %s\n", argv[1], lstmlm_last_error());
    return 1;
  }
  test_score(m);
  test_predict(m);
  test_predict_batch(m);
  test_generate(m);
  test_errors(m);
  lstmlm_model_free(m);
  printf("%d checks, %d failed\n", checks, failures);
  return failures == 0 ? 0 : 1;
}
