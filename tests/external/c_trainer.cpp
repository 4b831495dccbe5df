// A C-style trainer on include/lockstep/trainer.h (docs/protocol.md "C and C++ trainers"): the
// hello (turns only), one metrics line per step, the turn around each step. Its "loss" is
// tests/external/protocol_trainer.py's function of seed and step; each step is ~2 ms of work.
// --compute DTYPE declares the dtype in the hello (lockstep_hello_compute).
//   c_trainer --seed S --steps N --metrics FILE [--compute DTYPE]
#include <lockstep/trainer.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

static double now_ms() {
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

int main(int argc, char** argv) {
  long seed = 0, steps = 0;
  const char* metrics = nullptr;
  const char* compute = nullptr;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--seed")) seed = std::atol(argv[i + 1]);
    if (!std::strcmp(argv[i], "--steps")) steps = std::atol(argv[i + 1]);
    if (!std::strcmp(argv[i], "--metrics")) metrics = argv[i + 1];
    if (!std::strcmp(argv[i], "--compute")) compute = argv[i + 1];
  }
  FILE* m = metrics ? std::fopen(metrics, "w") : nullptr;
  if (!m || steps <= 0) return 2;
  if (compute)
    lockstep_hello_compute(m, "turns", compute);
  else
    lockstep_hello(m, "turns");
  lockstep_turn t = lockstep_turn_from_env();
  volatile double sink = 0;
  for (long step = 1; step <= steps; ++step) {
    lockstep_turn_wait(&t);
    const double t0 = now_ms();
    while (now_ms() - t0 < 2.0) sink = sink + 1e-9;  // the step's work
    const double loss = 4.0 / (1.0 + 0.1 * static_cast<double>(step)) +
                        static_cast<double>(seed % 97) * 1e-3 + 1.0 / 3.0;
    lockstep_step_line(m, step, loss, now_ms() - t0, 64);
    lockstep_turn_hand_over(&t);
  }
  lockstep_turn_finish(&t);
  std::fclose(m);
  return 0;
}
