#include "reduce/reduce.hpp"
#include "reduce/stream_stores.hpp"

namespace tutti::reduce {

void stream_copy(void* dst, const void* src, size_t bytes) {
  stream_copy_unfenced(dst, src, bytes);
  store_fence();
}

}  // namespace tutti::reduce
