// Options' defaults are the settings table's (core/env.cc): the public struct declares its fields
// without initializers, so that a default is written once.
#include "core/env.hpp"
#include "tutti/options.hpp"

namespace tutti {

Options::Options() {
  env::fill(*this, false);
}

}  // namespace tutti
