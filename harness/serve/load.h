// The load (issue 37): which requests arrive when, a pure function of the config and a seed, so
// both arms of a comparison get the same requests at the same times. Open loop: the arrival times
// never depend on the server's pace.
//   Poisson at rate_rps, x peak_multiplier inside the peak window (the evening peak), or a
//   replayed trace; lengths from the short/long mix; tokens from (seed, request id).
#pragma once

#include <cstdint>
#include <vector>

#include "harness/vocab/serve_config.h"

namespace lockstep::serve {

struct Request {
  int64_t id = 0;
  double arrival_s = 0;  // scheduled, from the load's start
  int64_t len = 0;       // tokens
  int lane = -1;         // -1: longer than every lane (rejected at the door, counted)
};

// The requests of one window. `seed` picks the window (a comparison's window k uses seed + k).
std::vector<Request> make_schedule(const ServeConfig& cfg, uint64_t seed);

// Request `id`'s tokens (len of them, each in 0..vocab-1), the same for every arm and run.
void fill_tokens(uint64_t seed, int64_t id, int64_t len, int64_t vocab, int64_t* out);

// The fixed request set: n requests drawn like the load's (the short/long mix) from a stream of
// their own, capped at the longest servable length, with ids (and so tokens) of their own. What
// the gate scores for the same math, and what the service-speed turns run.
std::vector<Request> fixed_request_set(const ServeConfig& cfg, int64_t n);

// The arrival rate at time t (requests/s): the base rate, x peak_multiplier in the peak window.
double rate_at(const ServeConfig& cfg, double t);

}  // namespace lockstep::serve
