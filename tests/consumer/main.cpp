// Loads a random model through the installed library and checks that a step gives a distribution.
#include <cmath>
#include <cstdio>
#include <lstmlm/engine.hpp>

int main() {
  auto model = lstmlm::Model::random(50, 8, 16, 2, 7);
  lstmlm::Engine engine(model, 1);
  lstmlm::State s = lstmlm::State::zeros(*model), next;
  std::vector<float> lp;
  engine.step(s, 3, next, lp);
  double total = 0;
  for (float x : lp) total += std::exp(static_cast<double>(x));
  if (std::fabs(total - 1.0) > 1e-4) {
    std::fprintf(stderr, "consumer: probabilities sum to %f\n", total);
    return 1;
  }
  std::printf("consumer: ok (%zu log-probabilities)\n", lp.size());
  return 0;
}
