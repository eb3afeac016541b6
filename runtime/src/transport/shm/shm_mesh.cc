#include "transport/shm/shm_mesh.hpp"

#include <unistd.h>

#include <charconv>

#include "core/error.hpp"
#include "core/log.hpp"
#include "core/parse.hpp"
#include "transport/framed_channel.hpp"
#include "transport/shm/shm_sizing.hpp"
#include "transport/shm/shm_stream.hpp"

namespace tutti::transport {

ShmMesh::ShmMesh(const MeshContext& context, std::vector<int> peers)
    : context_(context), peers_(std::move(peers)) {
  const MeshConfig& c = context_.config;
  const size_t capacity =
      ring_capacity_for(peers_.size(), c.options.shm_ring_bytes, c.options.shm_ring_budget);
  SegmentPurpose purpose{fmt::format("rank {}", c.rank),
                         fmt::format("its {} receive rings of {} (one per rank on this host)",
                                     peers_.size(), parse::bytes_text(capacity)),
                         "TUTTI_SHM_RING_BUDGET (bytes of rings per rank) or TUTTI_SHM_RING_BYTES"};
  try {
    own_ = ShmSegment::create(ShmSegment::name_for(c.job_id, c.rank), peers_.size(), capacity,
                              purpose);
  } catch (const Error& e) {
    context_.publish_failure("shm", c.rank, e.what());
    throw;
  }
  context_.store.set(context_.key("shm", c.rank), fmt::format("{} {}", own_->name(), getpid()));
}

size_t ShmMesh::ring_index(int owner, int writer) const {
  size_t index = 0;
  for (int r = 0; r < writer; ++r)
    if (r != owner && uses_shm(context_.config, owner, r)) ++index;
  return index;
}

void ShmMesh::map_peers() {
  for (int peer : peers_) {
    std::string value = context_.store.get(context_.key("shm", peer), context_.deadline);
    if (auto why = MeshContext::published_failure(value))
      throw make_error(ErrorCode::kPeerFailure,
                       "rank {}: rank {} on this host could not set up shared memory: {}",
                       context_.config.rank, peer, *why);
    size_t space = value.rfind(' ');
    pid_t pid = 0;
    const char* end = value.data() + value.size();
    if (space == std::string::npos ||
        std::from_chars(value.data() + space + 1, end, pid).ptr != end || pid <= 0)
      throw make_error(ErrorCode::kInternal, "store key {} holds '{}', not '<segment> <pid>'",
                       context_.key("shm", peer), value);
    std::string owner = fmt::format("rank {}", peer);
    peer_segments_.push_back(ShmSegment::open_ring(value.substr(0, space), owner,
                                                   ring_index(peer, context_.config.rank)));
    peer_pids_.push_back(pid);
  }
  context_.store.set(context_.key("shm-mapped", context_.config.rank), "1");
}

void ShmMesh::connect(std::vector<std::unique_ptr<Link>>& channels) {
  const MeshConfig& c = context_.config;
  context_.wait_for("shm-mapped", peers_, "map this rank's shared memory",
                    fmt::format("/dev/shm{} on host {}", own_->name(), context_.host(c.rank)));
  own_->unlink();
  for (size_t i = 0; i < peers_.size(); ++i) {
    int peer = peers_[i];
    channels[peer] = std::make_unique<FramedChannel>(
        peer, std::make_unique<ShmStream>(peer, context_.host(peer), peer_pids_[i], own_,
                                          ring_index(c.rank, peer), peer_segments_[i],
                                          ring_index(peer, c.rank)));
  }
}

}  // namespace tutti::transport
