// mismatch_check: every rank makes one collective call that the command line describes, where some
// ranks may be told to call something else (another count, dtype, op, root or collective). Each
// rank reports how its call ended:
//   "rank R: mismatch reported: TUTTI_ERR_MISMATCH: <message>"  exit 3
//   "rank R: WRONG: the call succeeded ..."                       exit 1 (a silent wrong answer)
//   "rank R: other error: <name>: <message>"                    exit 2
//   "rank R: ok"                                                exit 0 (all ranks agreed)
//
//   mismatch_check --call allreduce:1000:float32:sum [--rank 1=allreduce:10:float32:sum]...
//                  [--warmup N] [--then barrier]
// A call is kind:count:dtype:op-or-root (op for allreduce/reduce_scatter, root for broadcast; kind
// alone for barrier). --warmup makes N matching allreduces first, so the mismatch is not call #1.
// --then makes one more matching call after the first, for ranks whose own call cannot see the
// mismatch (a count of 0 moves nothing).
#include <fmt/format.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "tutti/tutti.h"
#include "tutti/types.hpp"

namespace {

struct Call {
  std::string kind;
  size_t count = 0;
  tutti_dtype_t dtype = TUTTI_FLOAT32;
  int op_or_root = 0;
};

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  for (;;) {
    size_t at = s.find(sep, start);
    out.push_back(s.substr(start, at == std::string::npos ? std::string::npos : at - start));
    if (at == std::string::npos) return out;
    start = at + 1;
  }
}

// The runtime's own names (tutti/types.hpp), whose values the C API's enums share.
template <typename Enum>
int lookup(int count, const std::string& name) {
  for (int i = 0; i < count; ++i)
    if (tutti::to_string(static_cast<Enum>(i)) == name) return i;
  std::fprintf(stderr, "mismatch_check: unknown name '%s'\n", name.c_str());
  std::exit(64);
}

Call parse_call(const std::string& text) {
  std::vector<std::string> f = split(text, ':');
  Call c;
  c.kind = f[0];
  if (c.kind == "barrier") return c;
  if (f.size() != 4) {
    std::fprintf(stderr, "mismatch_check: bad call '%s'\n", text.c_str());
    std::exit(64);
  }
  c.count = std::stoull(f[1]);
  c.dtype = static_cast<tutti_dtype_t>(lookup<tutti::DataType>(tutti::kNumDataTypes, f[2]));
  c.op_or_root =
      c.kind == "broadcast" ? std::stoi(f[3]) : lookup<tutti::ReduceOp>(tutti::kNumReduceOps, f[3]);
  return c;
}

int run(const Call& c, int size) {
  const size_t bytes = c.count * tutti::element_size(static_cast<tutti::DataType>(c.dtype));
  // Both buffers hold the largest any collective here needs (size blocks), filled with ones so a
  // sum that "succeeds" is visibly checked below.
  std::vector<unsigned char> send(bytes * static_cast<size_t>(size) + 64, 1), recv(send.size(), 0);
  const auto op = static_cast<tutti_op_t>(c.op_or_root);
  if (c.kind == "allreduce") return tutti_allreduce(send.data(), recv.data(), c.count, c.dtype, op);
  if (c.kind == "broadcast") return tutti_broadcast(recv.data(), c.count, c.dtype, c.op_or_root);
  if (c.kind == "allgather") return tutti_allgather(send.data(), recv.data(), c.count, c.dtype);
  if (c.kind == "reduce_scatter")
    return tutti_reduce_scatter(send.data(), recv.data(), c.count, c.dtype, op);
  if (c.kind == "barrier") return tutti_barrier();
  std::fprintf(stderr, "mismatch_check: unknown collective '%s'\n", c.kind.c_str());
  std::exit(64);
}

}  // namespace

int main(int argc, char** argv) {
  std::string call_text;
  std::map<int, std::string> overrides;
  int warmup = 0;
  std::string then;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--call") {
      call_text = value;
    } else if (flag == "--rank") {
      auto eq = value.find('=');
      overrides[std::stoi(value.substr(0, eq))] = value.substr(eq + 1);
    } else if (flag == "--warmup") {
      warmup = std::stoi(value);
    } else if (flag == "--then") {
      then = value;
    } else {
      std::fprintf(stderr, "mismatch_check: unknown flag %s\n", flag.c_str());
      return 64;
    }
  }
  if (tutti_init() != 0) {
    std::printf("rank ?: other error: %s: %s\n", tutti_error_name(-1), tutti_last_error());
    return 2;
  }
  const int rank = tutti_rank(), size = tutti_size();
  int rc = 0;
  for (int i = 0; i < warmup && rc == 0; ++i) {
    // A rank still finishing the last warmup call may learn of the mismatch there, from the peer
    // that found it: that is the mismatch reported, too.
    float x = 1;
    rc = tutti_allreduce(&x, &x, 1, TUTTI_FLOAT32, TUTTI_SUM);
    if (rc == 0 && x != static_cast<float>(size)) {
      std::printf("rank %d: WRONG: warmup allreduce gave %g, not %d\n", rank,
                  static_cast<double>(x), size);
      return 1;
    }
  }
  auto mine = overrides.count(rank) ? overrides[rank] : call_text;
  if (rc == 0) rc = run(parse_call(mine), size);
  if (rc == 0 && !then.empty()) rc = run(parse_call(then), size);
  if (rc == TUTTI_ERR_MISMATCH) {
    std::printf("rank %d: mismatch reported: %s: %s\n", rank, tutti_error_name(rc),
                tutti_last_error());
    std::fflush(stdout);
    tutti_finalize();
    return 3;
  }
  if (rc == 0) {
    std::printf("rank %d: %s\n", rank,
                overrides.empty() ? "ok" : "WRONG: the call succeeded although ranks disagreed");
    tutti_finalize();
    return overrides.empty() ? 0 : 1;
  }
  std::printf("rank %d: other error: %s: %s\n", rank, tutti_error_name(rc), tutti_last_error());
  std::fflush(stdout);
  tutti_finalize();
  return 2;
}
