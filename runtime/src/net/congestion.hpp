// Which TCP congestion control a data socket uses (TUTTI_TCP_CONGESTION). A collective's traffic
// comes in bursts of many segments between ranks that wait for each other. Between network
// namespace pods (veth into a bridge) BBR, which paces each connection inside the kernel when no
// fq qdisc does it, measured half of CUBIC's throughput, with thousands of retransmits where CUBIC
// had none (docs/PERFORMANCE.md). So by default ("auto") a data socket the kernel gave BBR is
// switched to CUBIC; any other choice of the host's is kept.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tutti::net {

struct CongestionSetting {
  enum class Mode { kAuto, kSystem, kNamed } mode = Mode::kAuto;
  std::string name;  // kNamed: the algorithm, as the kernel names it ("cubic", "reno", "dctcp")
};

// "auto", "system" or an algorithm's name (letters, digits, '_' and '-', at most 15 characters,
// the kernel's limit). Throws Error(kConfig) naming `setting` otherwise.
CongestionSetting parse_congestion(std::string_view text, std::string_view setting);

// What applying a setting to a socket did.
struct CongestionResult {
  std::string before;  // the kernel's choice for the socket ("" when it could not be read)
  std::string after;   // in use now
  std::string note;    // auto only: why a switch away from BBR did not happen ("" if none)
};

// Applies `setting` to the TCP socket `fd`, best before its handshake: on a listening socket (the
// connections it accepts inherit the choice) or a socket not yet connected. A named algorithm the
// kernel lacks, or does not allow this process to choose, is Error(kConfig) saying which the
// kernel has and allows (`who` names the connection, as "the data connection to rank 1 ..."). auto
// never fails: when CUBIC cannot be set, the socket keeps BBR and `note` says why.
CongestionResult apply_congestion(int fd, const CongestionSetting& setting, std::string_view who);

// The kernel's lists (/proc/sys/net/ipv4/tcp_{available,allowed}_congestion_control); empty when
// unreadable.
std::vector<std::string> available_congestion_controls();
std::vector<std::string> allowed_congestion_controls();

}  // namespace tutti::net
