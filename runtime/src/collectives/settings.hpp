// What a communicator tells its collectives about how it was configured (Options), so that no
// collective reads the environment: the transport setting the cost model prices the on-host link
// by, the shared-memory allreduce's store mode, and the cost model itself (with the
// communicator's segment size and tuning file).
#pragma once

#include <memory>
#include <string>

#include "collectives/cost_model.hpp"

namespace tutti::collectives {

struct Settings {
  std::string transport = "auto";   // auto | tcp | shm (TUTTI_TRANSPORT)
  std::string shm_stores = "auto";  // auto | cached | streaming (TUTTI_SHM_STORES)
  std::shared_ptr<const CostModel> model = std::make_shared<const CostModel>(CostModel::defaults());

  // The settings of a Context that carries none (unit tests driving the algorithms directly).
  static const Settings& defaults() {
    static const Settings settings;
    return settings;
  }
};

}  // namespace tutti::collectives
