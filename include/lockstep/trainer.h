/* Lockstep's trainer protocol v2 for C and C++ trainers (docs/protocol.md): the hello line, the
 * metrics lines and the turn. Header-only, POSIX, no dependency; C99 or C++11.
 *
 *   FILE* m = fopen(getenv("LOCKSTEP_METRICS"), "w");
 *   lockstep_hello(m, "turns");                    // announce what this trainer supports
 *   (or lockstep_hello_compute(m, "turns", "bf16"): also the dtype it computes in)
 *   lockstep_turn t = lockstep_turn_from_env();    // inactive without LOCKSTEP_TURN_FD
 *   for (long step = 1; step <= steps; ++step) {
 *     lockstep_turn_wait(&t);                      // before the step's clock starts
 *     double t0 = now_ms();  ... the step ...  double ms = now_ms() - t0;
 *     lockstep_step_line(m, step, loss, ms, tokens);
 *     lockstep_turn_hand_over(&t);                 // after the step
 *   }
 *   lockstep_turn_finish(&t);                      // waits for the peer's last step, closes
 *   fclose(m);
 *
 * Noise and probe (the weight noise, checkpoints, CountSketch) are the trainer's own math: their
 * environment variables and the sketch's exact definition are in docs/protocol.md.
 */
#ifndef LOCKSTEP_TRAINER_H_
#define LOCKSTEP_TRAINER_H_

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <unistd.h>

#define LOCKSTEP_PROTOCOL 2

/* The hello line, first in the metrics file. `supports`: a comma-separated subset of
 * "turns,noise,probe" (only what this trainer really implements), or "". `compute`: the dtype the
 * trainer computes in, "fp32", "tf32", "bf16" or "fp16" (it sets the noise envelope's u: docs/
 * protocol.md "The compute dtype"), or NULL to declare none. */
static inline void lockstep_hello_compute(FILE* metrics, const char* supports, const char* compute) {
  const char* s = supports;
  int first = 1;
  fprintf(metrics, "{\"lockstep\": {\"protocol\": %d, \"supports\": [", LOCKSTEP_PROTOCOL);
  while (s && *s) {
    const char* end = s;
    while (*end && *end != ',') ++end;
    if (end > s) fprintf(metrics, "%s\"%.*s\"", first ? "" : ", ", (int)(end - s), s), first = 0;
    s = *end ? end + 1 : end;
  }
  fprintf(metrics, "]");
  if (compute) fprintf(metrics, ", \"compute\": \"%s\"", compute);
  fprintf(metrics, "}}\n");
  fflush(metrics);
}

/* The hello without a compute dtype: Lockstep takes [precision] compute, then fp32. */
static inline void lockstep_hello(FILE* metrics, const char* supports) {
  lockstep_hello_compute(metrics, supports, NULL);
}

/* One step's line: the required fields (a non-finite loss is written as null). */
static inline void lockstep_step_line(FILE* metrics, long step, double loss, double step_ms,
                                      long tokens) {
  if (isfinite(loss))
    fprintf(metrics, "{\"step\": %ld, \"loss\": %.17g, \"step_ms\": %.6f, \"tokens\": %ld}\n", step,
            loss, step_ms, tokens);
  else
    fprintf(metrics, "{\"step\": %ld, \"loss\": null, \"step_ms\": %.6f, \"tokens\": %ld}\n", step,
            step_ms, tokens);
  fflush(metrics);
}

/* The turn: one end of a socket pair; fd < 0 when inactive or ended. */
typedef struct {
  int fd;
} lockstep_turn;

static inline lockstep_turn lockstep_turn_from_env(void) {
  lockstep_turn t = {-1};
  const char* v = getenv("LOCKSTEP_TURN_FD");
  char* end = NULL;
  long fd;
  if (!v) return t;
  fd = strtol(v, &end, 10);
  if (end != v && *end == '\0' && fd >= 0) t.fd = (int)fd;
  unsetenv("LOCKSTEP_TURN_FD"); /* what this trainer starts does not inherit it */
  return t;
}

static inline void lockstep_turn_close(lockstep_turn* t) {
  if (t->fd >= 0) close(t->fd);
  t->fd = -1;
}

/* Blocks until the peer hands over the turn; a peer that has gone ends the turns. */
static inline void lockstep_turn_wait(lockstep_turn* t) {
  char token;
  ssize_t n;
  if (t->fd < 0) return;
  do n = recv(t->fd, &token, 1, 0);
  while (n < 0 && errno == EINTR);
  if (n != 1) lockstep_turn_close(t);
}

static inline void lockstep_turn_hand_over(lockstep_turn* t) {
  const char token = 't';
  ssize_t n;
  if (t->fd < 0) return;
  do n = send(t->fd, &token, 1, MSG_NOSIGNAL);
  while (n < 0 && errno == EINTR);
  if (n != 1) lockstep_turn_close(t);
}

/* After the last step: the peer's step that follows this run's last ends before it closes. */
static inline void lockstep_turn_finish(lockstep_turn* t) {
  lockstep_turn_wait(t);
  lockstep_turn_close(t);
}

#endif /* LOCKSTEP_TRAINER_H_ */
