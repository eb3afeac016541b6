// FileStore: a Store in a directory on a shared filesystem (NFS, a volume every pod mounts).
// Writes are atomic (write to a temp name, then rename); waits poll with backoff.
#pragma once

#include <chrono>
#include <string>

#include "bootstrap/store.hpp"

namespace tutti::bootstrap {

class FileStore : public Store {
 public:
  // The directory must exist (Error(kConfig) otherwise); the store never creates it. An add()
  // waits at most lock_timeout for the directory's lock.
  explicit FileStore(std::string directory,
                     std::chrono::milliseconds lock_timeout = std::chrono::seconds(60));
  void set(const std::string& key, const std::string& value) override;
  std::string get(const std::string& key, Deadline deadline) override;
  int64_t add(const std::string& key, int64_t delta) override;  // flock-protected
  std::vector<std::string> missing(const std::vector<std::string>& keys) override;
  void wait(const std::vector<std::string>& keys, Deadline deadline) override;
  bool remove(const std::string& key) override;
  std::string describe() const override;

 private:
  std::string path_for(const std::string& key) const;  // keys are escaped into safe file names
  std::string directory_;
  std::chrono::milliseconds lock_timeout_;
};

}  // namespace tutti::bootstrap
