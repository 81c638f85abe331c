/* example.c: score a text word by word, then show the most likely next words.
 *   cc -std=c99 example.c $(pkg-config --cflags --libs lstmlm) -o example
 *   ./example models/fairytales-word "the old man"                                        */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lstmlm/lstmlm.h"

/* Prints the failed call's message and leaves main with status 1. */
#define TRY(call)                                                               \
  do {                                                                          \
    lstmlm_status s_ = (call);                                                  \
    if (s_ != LSTMLM_OK) {                                                      \
      fprintf(stderr, "%s: %s\n", lstmlm_status_name(s_), lstmlm_last_error()); \
      goto done;                                                                \
    }                                                                           \
  } while (0)

int main(int argc, char** argv) {
  lstmlm_model_options options = LSTMLM_MODEL_OPTIONS_INIT;
  lstmlm_model* model = NULL;
  lstmlm_state* state = NULL;
  int32_t* ids = NULL;
  int32_t top_ids[5];
  float top_logprobs[5];
  size_t n = 0, i, top_n = 0;
  int status = 1;
  if (argc != 3) {
    fprintf(stderr, "usage: %s MODEL_DIR TEXT\n", argv[0]);
    return 2;
  }
  options.threads = 1;
  TRY(lstmlm_model_load(argv[1], &options, &model));

  /* The text's token ids: ask for the count, then fill a buffer of that size. */
  TRY(lstmlm_tokenize(model, argv[2], strlen(argv[2]), NULL, 0, &n));
  ids = malloc((n ? n : 1) * sizeof *ids);
  if (ids == NULL) goto done;
  TRY(lstmlm_tokenize(model, argv[2], strlen(argv[2]), ids, n, &n));

  /* From the start of a sentence: ln p of each token given the ones before it, then step past it. */
  TRY(lstmlm_state_new(model, 1, &state));
  for (i = 0; i < n; ++i) {
    const char* word = NULL;
    float logprob = 0;
    TRY(lstmlm_model_token(model, ids[i], &word, NULL));
    TRY(lstmlm_state_logprob(model, state, ids[i], &logprob));
    printf("%-12s %.9g\n", word, logprob);
    TRY(lstmlm_step_batch(model, &state, &ids[i], 1, NULL));
  }

  /* The five most likely next tokens. */
  TRY(lstmlm_state_top(model, state, 5, top_ids, top_logprobs, &top_n));
  printf("next:");
  for (i = 0; i < top_n; ++i) {
    const char* word = NULL;
    TRY(lstmlm_model_token(model, top_ids[i], &word, NULL));
    printf(" %s (%.3f)", word, top_logprobs[i]);
  }
  printf("\n");
  status = 0;
done:
  free(ids);
  lstmlm_state_free(state);
  lstmlm_model_free(model);
  return status;
}
