#include "baseline.hpp"

#include <fmt/format.h>

#include "baselines/gloo_baseline.hpp"
#include "baselines/inplace_baseline.hpp"
#include "baselines/mpi_baseline.hpp"
#include "baselines/nccl_baseline.hpp"

namespace tutti::bench {

std::string_view baseline_name(BaselineKind kind) {
  switch (kind) {
    case BaselineKind::kNone:
      return "none";
    case BaselineKind::kMpi:
      return "mpi";
    case BaselineKind::kGloo:
      return "gloo";
    case BaselineKind::kNccl:
      return "nccl";
    case BaselineKind::kInPlace:
      return "inplace";
  }
  return "?";
}

std::optional<BaselineKind> parse_baseline(const std::string& name) {
  for (BaselineKind k : {BaselineKind::kNone, BaselineKind::kMpi, BaselineKind::kGloo,
                         BaselineKind::kNccl, BaselineKind::kInPlace})
    if (baseline_name(k) == name) return k;
  return std::nullopt;
}

bool baseline_built(BaselineKind kind) {
  switch (kind) {
    case BaselineKind::kNone:
    case BaselineKind::kInPlace:
      return true;
    case BaselineKind::kMpi:
      return TUTTI_BENCH_HAVE_MPI != 0;
    case BaselineKind::kGloo:
      return TUTTI_BENCH_HAVE_GLOO != 0;
    case BaselineKind::kNccl:
      return TUTTI_BENCH_HAVE_CUDA != 0;
  }
  return false;
}

std::string baseline_missing_reason(BaselineKind kind) {
  if (baseline_built(kind)) return "";
  if (kind == BaselineKind::kMpi)
    return "this tutti-bench was built without MPI, so --baseline mpi is not available; install "
           "Open MPI (apt-get install openmpi-bin libopenmpi-dev, or scripts/install-deps.sh) and "
           "reconfigure with -DTUTTI_WITH_MPI=AUTO or ON";
  if (kind == BaselineKind::kNccl)
    return "this tutti-bench was built without CUDA, so --baseline nccl is not available; "
           "reconfigure with -DTUTTI_WITH_CUDA=ON on a machine with the CUDA toolkit and NCCL";
  return "this tutti-bench was built without Gloo, so --baseline gloo is not available; install "
         "libgloo-dev (apt-get install libgloo-dev, or scripts/install-deps.sh) and reconfigure "
         "with -DTUTTI_WITH_GLOO=AUTO or ON";
}

namespace {
// Nothing to do before init and nothing to connect: --baseline none.
class NoSession final : public BaselineSession {
 public:
  std::unique_ptr<Baseline> connect(Communicator&) override { return nullptr; }
};
}  // namespace

std::unique_ptr<BaselineSession> start_baseline_session(BaselineKind kind) {
  if (!baseline_built(kind)) throw Error(ErrorCode::kConfig, baseline_missing_reason(kind));
  switch (kind) {
    case BaselineKind::kNone:
      return std::make_unique<NoSession>();
    case BaselineKind::kInPlace:
      return start_inplace_session();
    case BaselineKind::kMpi:
#if TUTTI_BENCH_HAVE_MPI
      return start_mpi_session();
#else
      break;
#endif
    case BaselineKind::kGloo:
#if TUTTI_BENCH_HAVE_GLOO
      return start_gloo_session();
#else
      break;
#endif
    case BaselineKind::kNccl:
#if TUTTI_BENCH_HAVE_CUDA
      return start_nccl_session();
#else
      break;
#endif
  }
  return std::make_unique<NoSession>();
}

}  // namespace tutti::bench
