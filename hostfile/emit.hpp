// Writing a Hostfile for the MPI that will read it.
#pragma once

#include <string>
#include <string_view>

#include "hostfile/hostfile.hpp"

namespace tutti::hostfile {

enum class Format {
  kOpenMpi,  // "host slots=N [max_slots=M]" (Open MPI 4 and 5, tuttirun)
  kMpich,    // "host:N" (MPICH's Hydra)
  kIntel,    // "host:N" (Intel MPI's Hydra; same syntax as MPICH)
  kPlain,    // "host": names only, one per line; slots are dropped
};

// "openmpi", "mpich", "intel" or "plain"; anything else is kConfig listing the choices.
Format parse_format(std::string_view name);
std::string_view format_name(Format format);

// One line per host, each ending in '\n'. max_slots survives only in the Open MPI format.
std::string emit(const Hostfile& hostfile, Format format);

}  // namespace tutti::hostfile
