// The shared-memory half of connect_mesh. Each rank creates its segment (one ring per local peer
// that writes to it, sized by the rank's ring budget: shm_sizing.hpp) and publishes
// "<job>/shm/<rank>" = "<segment> <pid>", or "failed: <why>" when /dev/shm has no room, so its
// peers fail at once with that reason; maps the one ring it writes of each peer's segment and says
// so ("<job>/shm-mapped/<rank>"); and once all its peers have mapped their rings, unlinks the name,
// so nothing is left in /dev/shm even if the job is killed later.
#pragma once

#include <memory>
#include <vector>

#include "transport/link.hpp"
#include "transport/mesh_rendezvous.hpp"
#include "transport/shm/segment.hpp"

namespace tutti::transport {

class ShmMesh {
 public:
  // Creates and publishes this rank's segment.
  ShmMesh(const MeshContext& context, std::vector<int> peers);

  // Call once every peer has published: maps their segments and announces it.
  void map_peers();

  // Waits until every peer mapped this rank's segment, unlinks it, fills channels[p] for each peer.
  void connect(std::vector<std::unique_ptr<Link>>& channels);

 private:
  // Which ring of `owner`'s segment `writer` writes: writers are numbered in rank order.
  size_t ring_index(int owner, int writer) const;

  const MeshContext& context_;
  std::vector<int> peers_;
  std::shared_ptr<ShmSegment> own_;
  std::vector<std::shared_ptr<ShmSegment>> peer_segments_;  // parallel to peers_
  std::vector<pid_t> peer_pids_;
};

}  // namespace tutti::transport
