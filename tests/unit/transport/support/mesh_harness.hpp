// Test helpers: run the ranks of a world as threads of this process, each building its own mesh
// through one shared MemoryStore.
#pragma once

#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "bootstrap/store.hpp"
#include "core/error.hpp"
#include "transport/mesh.hpp"

namespace tutti::transport::test_support {

// kTcp: every rank on its own host; kShm: one host; kMixed: two ranks per host (auto = both kinds).
enum class Layout { kTcp, kShm, kMixed };
std::string_view to_string(Layout layout);

std::vector<std::string> host_ids(Layout layout, int size);

// A job id no other test (or earlier run) uses, so segment names never collide.
std::string unique_job_id(std::string_view label);

MeshConfig mesh_config(int rank, int size, Layout layout, const std::string& job_id);

// Runs fn(rank) on one thread per rank and returns what each threw (null when it returned).
std::vector<std::exception_ptr> run_ranks(int size, const std::function<void(int)>& fn);

// Like run_ranks but rethrows the first failure.
void run_ranks_or_throw(int size, const std::function<void(int)>& fn);

// "" when `error` is a tutti::Error with `code` whose message contains `needle`; otherwise what
// it is instead (nothing thrown, another exception, another code, or the message).
std::string error_mismatch(const std::exception_ptr& error, ErrorCode code,
                           std::string_view needle);

// The /dev/shm files of this job (there must be none once the mesh is built).
std::vector<std::string> leftover_segments(const std::string& job_id);

// Deterministic content: sender, receiver and length all show in the bytes.
std::vector<std::byte> pattern(int from, int to, size_t size, int salt = 0);

}  // namespace tutti::transport::test_support
