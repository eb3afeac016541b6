// PmiClient: the PMI-1 wire protocol, which MPICH's Hydra mpiexec (and Slurm's PMI) speak to the
// processes they start, over the socket they pass in PMI_FD (or at PMI_PORT). tutti uses it without
// linking any MPI: put the store's address into the job's key-value space, barrier, get it back.
// Every request waits for its answer within a deadline; a launcher that does not answer, answers
// garbage or closes the connection is an Error naming the command and what to check.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "core/deadline.hpp"
#include "net/fd.hpp"

namespace tutti::bootstrap {

class PmiClient {
 public:
  // Over the fd the launcher passed (PMI_FD; not closed by the client: the launcher owns it).
  // Error(kConfig) when the fd is not an open socket.
  static std::unique_ptr<PmiClient> over_fd(int fd, int rank);
  // Connects to host:port (PMI_PORT) and introduces itself with `pmi_id` (PMI_ID).
  static std::unique_ptr<PmiClient> over_port(const std::string& host_port, int pmi_id, int rank,
                                              Deadline deadline);

  // `fd`: the connection (owned by `owned` when the client opened it); `where` names it in errors.
  PmiClient(int fd, net::Fd owned, int rank, std::string where);
  PmiClient(const PmiClient&) = delete;
  PmiClient& operator=(const PmiClient&) = delete;
  // Sends cmd=finalize (best effort, briefly) when init succeeded.
  ~PmiClient();

  // cmd=init, cmd=get_maxes, cmd=get_my_kvsname.
  void init(Deadline deadline);
  void put(const std::string& key, const std::string& value, Deadline deadline);
  // Returns once every process of the job has entered the barrier.
  void barrier(Deadline deadline);
  std::string get(const std::string& key, Deadline deadline);

  const std::string& kvs_name() const { return kvs_name_; }
  // What a launcher reached at PMI_PORT said after cmd=initack (cmd=set rank=.. size=..); -1 when
  // it did not (PMI_FD: the launcher said it in PMI_RANK and PMI_SIZE instead).
  int launcher_rank() const { return launcher_rank_; }
  int launcher_size() const { return launcher_size_; }

  // "cmd=get_result rc=0 value=x" -> {cmd: get_result, rc: 0, value: x}; exposed for tests.
  static std::map<std::string, std::string> parse_line(std::string_view line);

 private:
  // Sends `line` (no newline) and reads the answer, which must be `expected_cmd` with rc=0.
  std::map<std::string, std::string> request(const std::string& line, std::string_view expected_cmd,
                                             Deadline deadline);
  void send_line(const std::string& line, Deadline deadline);
  std::string read_line(std::string_view waiting_for, Deadline deadline);

  int fd_ = -1;
  net::Fd owned_;  // set when the client opened the connection itself (PMI_PORT)
  int rank_ = 0;
  std::string where_;    // "the launcher's PMI socket (PMI_FD=6)"
  std::string pending_;  // bytes read past the last line
  std::string kvs_name_;
  size_t key_max_ = 64, value_max_ = 256;
  bool initialized_ = false;
  int launcher_rank_ = -1;
  int launcher_size_ = -1;
};

}  // namespace tutti::bootstrap
