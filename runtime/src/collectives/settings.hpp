// What a communicator tells its collectives about how it was configured, so that no collective
// reads the environment: its Options (the transport setting the cost model prices the on-host link
// by, the shared-memory allreduce's store mode) and the cost model made from them (with the
// communicator's segment size and tuning file).
#pragma once

#include <memory>

#include "collectives/cost_model.hpp"
#include "tutti/options.hpp"

namespace tutti::collectives {

struct Settings {
  Options options;
  std::shared_ptr<const CostModel> model = std::make_shared<const CostModel>(CostModel::defaults());

  // The settings of a Context that carries none (unit tests driving the algorithms directly).
  static const Settings& defaults() {
    static const Settings settings;
    return settings;
  }
};

}  // namespace tutti::collectives
