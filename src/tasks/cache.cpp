#include "lstmlm/tasks/cache.hpp"

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <string>

#include "lstmlm/error.hpp"

namespace lstmlm::tasks {

void CacheOptions::validate() const {
  if (window < 0 || window > (1 << 20))
    throw UsageError::option("cache_window",
                             " must be in [0, 1048576] (0 = no cache), got " + std::to_string(window));
  if (!(lambda >= 0 && lambda <= 1))
    throw UsageError::option("cache_lambda", " must be in [0, 1], got " + std::to_string(lambda));
  if (!(std::isfinite(theta) && theta >= 0 && theta <= 1000))
    throw UsageError::option("cache_theta", " must be in [0, 1000], got " + std::to_string(theta));
}

NeuralCache::NeuralCache(CacheOptions opt, size_t width) : opt_(opt), width_(width) {}

void NeuralCache::score(const float* h, const float* model_logprob, const int32_t* targets, size_t n,
                        float* out) {
  using Mat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  const size_t W = static_cast<size_t>(opt_.window);
  // keys_: the last min(seen, W) outputs before this call, then this call's n (rows of width_ floats).
  const size_t before = history_.size() / width_;
  history_.insert(history_.end(), h, h + n * width_);
  next_.insert(next_.end(), targets, targets + n);
  const Eigen::Map<const Mat> keys(history_.data(), Eigen::Index(before + n), Eigen::Index(width_));
  const size_t block = std::max<size_t>(1, std::min<size_t>(256, W));
  std::vector<double> row(W);
  for (size_t b = 0; b < n; b += block) {
    const size_t m = std::min(block, n - b);
    // Query idx (b <= idx < b + m) sits at key row p = before + idx and attends over rows [p - W, p): the
    // block's queries need rows [before + b - W, before + b + m), when there are that many.
    const size_t first = before + b >= W ? before + b - W : 0;
    const size_t last = before + b + m;
    Mat logits;
    if (seen_ + static_cast<int64_t>(b + m - 1) > static_cast<int64_t>(W))  // its last query uses the cache
      logits.noalias() = keys.middleRows(Eigen::Index(before + b), Eigen::Index(m)) *
                         keys.middleRows(Eigen::Index(first), Eigen::Index(last - first)).transpose();
    for (size_t idx = b; idx < b + m; ++idx) {
      const int64_t i = seen_ + static_cast<int64_t>(idx);  // the prediction's position in the document
      double p_out = model_logprob[idx];
      if (i > static_cast<int64_t>(W)) {
        const size_t p = before + idx, from = p - W;
        double top = -INFINITY;
        for (size_t j = 0; j < W; ++j) {
          row[j] = opt_.theta * double(logits(Eigen::Index(idx - b), Eigen::Index(from + j - first)));
          top = std::max(top, row[j]);
        }
        double sum = 0, hit = 0;
        for (size_t j = 0; j < W; ++j) {
          const double e = std::exp(row[j] - top);
          sum += e;
          if (next_[from + j] == targets[idx]) hit += e;
        }
        p_out =
            std::log(opt_.lambda * (hit / sum) + (1 - opt_.lambda) * std::exp(double(model_logprob[idx])));
      }
      stats_.ln_with += p_out;
      stats_.ln_without += model_logprob[idx];
      out[idx] = static_cast<float>(p_out);
    }
  }
  seen_ += static_cast<int64_t>(n);
  stats_.tokens += static_cast<int64_t>(n);
  // Keep the last W outputs for the next call.
  const size_t rows = before + n, keep = std::min(rows, W);
  history_.erase(history_.begin(), history_.begin() + ptrdiff_t((rows - keep) * width_));
  next_.erase(next_.begin(), next_.begin() + ptrdiff_t(rows - keep));
}

void NeuralCache::mix_row(const float* h, float* row, size_t V) const {
  using Mat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  if (seen_ <= static_cast<int64_t>(opt_.window)) return;
  const size_t n = next_.size();
  const Eigen::Map<const Mat> keys(history_.data(), Eigen::Index(n), Eigen::Index(width_));
  const Eigen::Map<const Eigen::VectorXf> query(h, Eigen::Index(width_));
  const Eigen::VectorXf logits = keys * query;
  thread_local std::vector<double> e, ptr;
  e.resize(n);
  double top = -INFINITY, sum = 0;
  for (size_t j = 0; j < n; ++j) top = std::max(top, opt_.theta * double(logits[Eigen::Index(j)]));
  for (size_t j = 0; j < n; ++j) sum += e[j] = std::exp(opt_.theta * double(logits[Eigen::Index(j)]) - top);
  ptr.assign(V, 0.0);
  for (size_t j = 0; j < n; ++j)
    if (static_cast<size_t>(next_[j]) < V) ptr[static_cast<size_t>(next_[j])] += e[j] / sum;
  for (size_t w = 0; w < V; ++w)
    row[w] =
        static_cast<float>(std::log(opt_.lambda * ptr[w] + (1 - opt_.lambda) * std::exp(double(row[w]))));
}

NeuralCache prefill_cache(Engine& engine, const CacheOptions& opt, const std::vector<int32_t>& context,
                          std::vector<State>& states, MatrixRM& lp) {
  const size_t width = static_cast<size_t>(engine.model().config().layers.back().output_size());
  NeuralCache cache(opt, width);
  states.assign(1, State::zeros(engine.model()));
  if (!context.empty()) {
    // Scored against the next ids (the last against any id) for the top layer's output at every step.
    std::vector<int32_t> next(context.begin() + 1, context.end());
    next.push_back(0);
    std::vector<std::vector<float>> scores, top;
    StepMeasures m;
    m.top = &top;
    engine.score(Sequences{context}, Sequences{next}, states, scores, m);
    cache.push(top[0].data(), next.data(), context.size() - 1);
  }
  engine.predict(Sequences{{}}, states, lp);
  return cache;
}

void NeuralCache::push(const float* h, const int32_t* next, size_t n) {
  const size_t W = static_cast<size_t>(opt_.window);
  history_.insert(history_.end(), h, h + n * width_);
  next_.insert(next_.end(), next, next + n);
  seen_ += static_cast<int64_t>(n);
  const size_t rows = next_.size(), keep = std::min(rows, W);
  history_.erase(history_.begin(), history_.begin() + ptrdiff_t((rows - keep) * width_));
  next_.erase(next_.begin(), next_.begin() + ptrdiff_t(rows - keep));
}

}  // namespace lstmlm::tasks
