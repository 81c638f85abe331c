// Placeholder packing until the engine issue lands its kernel layout.
#include "kernels/packed.hpp"

namespace lstmlm::detail {

struct PackedWeights {};

PackedPtr pack_weights(const ModelConfig&, const Weights&) {
  return PackedPtr(new PackedWeights());
}
size_t packed_bytes(const PackedWeights&) { return 0; }
void PackedDeleter::operator()(const PackedWeights* p) const { delete p; }

}  // namespace lstmlm::detail
