// 64-byte aligned storage: a whole cache line per panel row and aligned vector loads.
#pragma once
#include <cstddef>
#include <new>
#include <vector>

namespace lstmlm::kernels {

template <class T>
struct AlignedAllocator {
  using value_type = T;
  AlignedAllocator() = default;
  template <class U>
  AlignedAllocator(const AlignedAllocator<U>&) {}
  T* allocate(size_t n) { return static_cast<T*>(::operator new(n * sizeof(T), std::align_val_t(64))); }
  void deallocate(T* p, size_t) { ::operator delete(p, std::align_val_t(64)); }
  bool operator==(const AlignedAllocator&) const { return true; }
};
using FloatBuf = std::vector<float, AlignedAllocator<float>>;
using ByteBuf = std::vector<unsigned char, AlignedAllocator<unsigned char>>;

// n rounded up to a multiple of m: the padded sizes of the packed layouts.
inline int round_up(int n, int m) { return (n + m - 1) / m * m; }

}  // namespace lstmlm::kernels
