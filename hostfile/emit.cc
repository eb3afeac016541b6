#include "hostfile/emit.hpp"

#include <fmt/format.h>

#include "core/error.hpp"

namespace tutti::hostfile {

Format parse_format(std::string_view name) {
  if (name == "openmpi") return Format::kOpenMpi;
  if (name == "mpich") return Format::kMpich;
  if (name == "intel") return Format::kIntel;
  if (name == "plain") return Format::kPlain;
  throw make_error(ErrorCode::kConfig,
                   "unknown hostfile format '{}' (use openmpi, mpich, intel or plain)", name);
}

std::string_view format_name(Format format) {
  switch (format) {
    case Format::kOpenMpi:
      return "openmpi";
    case Format::kMpich:
      return "mpich";
    case Format::kIntel:
      return "intel";
    case Format::kPlain:
      return "plain";
  }
  return "unknown";
}

std::string emit(const Hostfile& hostfile, Format format) {
  std::string out;
  for (const Host& h : hostfile.hosts) {
    switch (format) {
      case Format::kOpenMpi:
        out += fmt::format("{} slots={}", h.name, h.slots);
        if (h.max_slots) out += fmt::format(" max_slots={}", *h.max_slots);
        break;
      case Format::kMpich:
      case Format::kIntel:
        out += fmt::format("{}:{}", h.name, h.slots);
        break;
      case Format::kPlain:
        out += h.name;
        break;
    }
    out += '\n';
  }
  return out;
}

}  // namespace tutti::hostfile
