// tutti C++ API. Errors are thrown as tutti::Error (see tutti/error.hpp).
//
//   tutti::World world;                          // init from the environment; finalize at scope exit
//   auto& comm = world.communicator();
//   comm.allreduce(grad.data(), grad.data(), grad.size(), tutti::DataType::kFloat32, tutti::ReduceOp::kSum);
//   comm.allreduce(std::span<float>(grad), tutti::ReduceOp::kAvg);   // typed, in place
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <type_traits>

#include "tutti/error.hpp"
#include "tutti/types.hpp"

#if defined(__GNUC__)
#define TUTTI_CXX_API __attribute__((visibility("default")))
#else
#define TUTTI_CXX_API
#endif

namespace tutti {

namespace comm {
class Communicator;
}

template <typename T>
constexpr DataType data_type_of() {
  if constexpr (std::is_same_v<T, float>) return DataType::kFloat32;
  else if constexpr (std::is_same_v<T, double>) return DataType::kFloat64;
  else if constexpr (std::is_same_v<T, int32_t>) return DataType::kInt32;
  else if constexpr (std::is_same_v<T, int64_t>) return DataType::kInt64;
  else if constexpr (std::is_same_v<T, uint8_t>) return DataType::kUInt8;
  else static_assert(sizeof(T) == 0, "no tutti DataType for this element type; use the void* overloads");
}

// A group of ranks that run collectives together. Calls are synchronous; use one thread at a time.
class TUTTI_CXX_API Communicator {
 public:
  explicit Communicator(std::unique_ptr<comm::Communicator> impl);
  ~Communicator();
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  int rank() const;
  int size() const;
  int local_rank() const;
  int local_size() const;
  int cross_rank() const;
  int cross_size() const;

  void allreduce(const void* send, void* recv, size_t count, DataType type, ReduceOp op);
  void broadcast(void* buf, size_t count, DataType type, int root);
  void allgather(const void* send, void* recv, size_t count, DataType type);
  void reduce_scatter(const void* send, void* recv, size_t recv_count, DataType type, ReduceOp op);
  void barrier();

  template <typename T>
  void allreduce(std::span<T> data, ReduceOp op) {
    allreduce(data.data(), data.data(), data.size(), data_type_of<std::remove_const_t<T>>(), op);
  }
  template <typename T>
  void allreduce(std::span<const T> send, std::span<T> recv, ReduceOp op) {
    if (send.size() != recv.size()) throw Error(ErrorCode::kInvalidArgument, "allreduce: send and recv sizes differ");
    allreduce(send.data(), recv.data(), send.size(), data_type_of<T>(), op);
  }
  template <typename T>
  void broadcast(std::span<T> data, int root) {
    broadcast(data.data(), data.size(), data_type_of<T>(), root);
  }

  comm::Communicator& impl() { return *impl_; }

 private:
  std::unique_ptr<comm::Communicator> impl_;
};

// Joins the world from the environment (idempotent) and returns the world communicator.
TUTTI_CXX_API Communicator& init();
TUTTI_CXX_API void finalize();
TUTTI_CXX_API bool initialized();
// The world communicator; throws Error(kNotInitialized) before init().
TUTTI_CXX_API Communicator& world();

// RAII: init() on construction, finalize() on destruction.
class TUTTI_CXX_API World {
 public:
  World() : comm_(&init()) {}
  ~World() { finalize(); }
  World(const World&) = delete;
  World& operator=(const World&) = delete;
  Communicator& communicator() { return *comm_; }

 private:
  Communicator* comm_;
};

}  // namespace tutti
