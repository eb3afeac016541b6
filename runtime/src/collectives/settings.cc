#include "collectives/settings.hpp"

#include "collectives/context.hpp"

namespace tutti::collectives {

const Settings& settings_of(const Context& ctx) {
  return ctx.settings != nullptr ? *ctx.settings : Settings::defaults();
}

}  // namespace tutti::collectives
