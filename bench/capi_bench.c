/* The C API's two embedded workloads, timed per operation (bench/keyboard_decoder.py builds the models,
 * compiles this against the build's liblstmlm.so and runs it; see docs/keyboard.md):
 *   keyboard MODEL PRECISION N   N keystrokes of a user typing the vocabulary's words: per keystroke the
 *                                state advances one token (lstmlm_step_batch, n 1, no rows) and the top 10
 *                                completions of the letters typed are ranked (lstmlm_state_complete); each
 *                                keystroke's time is recorded, and the completion alone too.
 *   decoder MODEL PRECISION SECONDS  a beam-4 decoder's LM calls for SECONDS of audio at 3.5 tokens a second:
 *                                per token, the 4 hypotheses advance in one lstmlm_step_batch with their
 *                                n x V log-probs (shallow fusion reads them all).
 * One engine thread. Prints one JSON line: the percentiles in microseconds, the peak RSS (VmHWM) in KB. */
#define _POSIX_C_SOURCE 200809L
#include <lstmlm/lstmlm.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static void ok(lstmlm_status s, const char* what) {
  if (s != LSTMLM_OK) {
    fprintf(stderr, "capi_bench: %s: %s: %s\n", what, lstmlm_status_name(s), lstmlm_last_error());
    exit(1);
  }
}

static int by_value(const void* a, const void* b) {
  const double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

static double pct(double* v, size_t n, double p) {
  size_t i = (size_t)(p * (double)(n - 1) + 0.5);
  return v[i];
}

static long peak_rss_kb(void) {
  char line[256];
  long kb = -1;
  FILE* f = fopen("/proc/self/status", "r");
  if (!f) return -1;
  while (fgets(line, sizeof line, f))
    if (strncmp(line, "VmHWM:", 6) == 0) kb = strtol(line + 6, NULL, 10);
  fclose(f);
  return kb;
}

static void report(const char* name, double* t, size_t n) {
  qsort(t, n, sizeof *t, by_value);
  printf("\"%s\": {\"n\": %zu, \"p50_us\": %.2f, \"p90_us\": %.2f, \"p99_us\": %.2f, \"max_us\": %.2f}", name, n,
         pct(t, n, 0.5), pct(t, n, 0.9), pct(t, n, 0.99), t[n - 1]);
}

int main(int argc, char** argv) {
  lstmlm_model_options opt = LSTMLM_MODEL_OPTIONS_INIT;
  lstmlm_model* m = NULL;
  int32_t V = 0;
  if (argc != 5 || (strcmp(argv[1], "keyboard") != 0 && strcmp(argv[1], "decoder") != 0)) {
    fprintf(stderr, "usage: capi_bench keyboard|decoder MODEL fp32|bf16|int8 N\n");
    return 2;
  }
  opt.threads = 1;
  opt.precision = strcmp(argv[3], "int8") == 0   ? LSTMLM_PRECISION_INT8
                  : strcmp(argv[3], "bf16") == 0 ? LSTMLM_PRECISION_BF16
                                                 : LSTMLM_PRECISION_FP32;
  ok(lstmlm_model_load(argv[2], &opt, &m), "load");
  ok(lstmlm_model_vocab_size(m, &V), "vocab_size");
  if (strcmp(argv[1], "keyboard") == 0) {
    const size_t n = (size_t)atol(argv[4]);
    double* keystroke = malloc(n * sizeof *keystroke);
    double* complete = malloc(n * sizeof *complete);
    lstmlm_state* s = NULL;
    int32_t ids[10];
    float lps[10];
    size_t got = 0, k = 0, warm;
    unsigned rng = 12345;
    ok(lstmlm_state_new(m, 1, &s), "state_new");
    for (warm = 0; k < n; ++warm) {
      /* The next word the user types: its letters one keystroke each, then it is committed. */
      const int32_t word = 2 + (int32_t)((rng = rng * 1103515245u + 12345u) % (unsigned)(V - 2));
      const char* text = NULL;
      size_t len = 0, i;
      ok(lstmlm_model_token(m, word, &text, &len), "token");
      for (i = 1; i <= len && k < n; ++i) {
        const double t0 = now_us();
        ok(lstmlm_step_batch(m, &s, &word, 1, NULL), "step_batch");
        const double t1 = now_us();
        ok(lstmlm_state_complete(m, s, text, i, NULL, NULL, 0, 10, ids, lps, &got), "complete");
        const double t2 = now_us();
        if (warm > 20) { /* past the first words: caches and the pool's engine warm */
          keystroke[k] = t2 - t0;
          complete[k] = t2 - t1;
          ++k;
        }
      }
    }
    printf("{\"workload\": \"keyboard\", \"precision\": \"%s\", ", argv[3]);
    report("keystroke", keystroke, n);
    printf(", ");
    report("complete", complete, n);
    printf(", \"peak_rss_kb\": %ld}\n", peak_rss_kb());
    lstmlm_state_free(s);
    free(keystroke);
    free(complete);
  } else {
    const double seconds = atof(argv[4]);
    const size_t tokens = (size_t)(seconds * 3.5 + 0.5);
    lstmlm_state* beam[4];
    int32_t next[4];
    float* rows = malloc((size_t)V * 4 * sizeof *rows);
    double* step = malloc(tokens * sizeof *step);
    double total = 0;
    size_t t, b;
    unsigned rng = 777;
    for (b = 0; b < 4; ++b) ok(lstmlm_state_new(m, 1, &beam[b]), "state_new");
    for (t = 0; t < tokens + 3; ++t) {
      for (b = 0; b < 4; ++b) next[b] = 1 + (int32_t)((rng = rng * 1103515245u + 12345u) % (unsigned)(V - 1));
      const double t0 = now_us();
      ok(lstmlm_step_batch(m, beam, next, 4, rows), "step_batch");
      const double dt = now_us() - t0;
      if (t >= 3) { /* three warm-up steps */
        step[t - 3] = dt;
        total += dt;
      }
    }
    printf("{\"workload\": \"decoder\", \"precision\": \"%s\", \"audio_s\": %.1f, \"lm_s_per_audio_s\": %.4f, ",
           argv[3], seconds, total / 1e6 / seconds);
    report("beam_step", step, tokens);
    printf(", \"peak_rss_kb\": %ld}\n", peak_rss_kb());
    for (b = 0; b < 4; ++b) lstmlm_state_free(beam[b]);
    free(rows);
    free(step);
  }
  lstmlm_model_free(m);
  return 0;
}
