// Options::from_env: the settings table (core/env.cc) fills every field from its TUTTI_* variable
// or its default; what no table row can say is checked here. Below this layer nothing reads the
// environment (tests/static/check_layers.sh enforces it).
#include "tutti/options.hpp"

#include "core/env.hpp"
#include "net/congestion.hpp"

namespace tutti {

Options Options::from_env() {
  Options o;
  env::fill(o, true);
  // A congestion control the kernel may name is checked by its shape here, so that a typo fails
  // at init rather than at the first TCP connection.
  (void)net::parse_congestion(o.tcp_congestion, "TUTTI_TCP_CONGESTION");
  return o;
}

}  // namespace tutti
