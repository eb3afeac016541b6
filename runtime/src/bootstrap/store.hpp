// Store: the rendezvous key-value space that ranks meet through before any channel exists.
// Every blocking call takes a Deadline; values are binary-safe strings.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/deadline.hpp"

namespace tutti::bootstrap {

class Store {
 public:
  virtual ~Store() = default;

  // Sets key to value, overwriting; wakes every waiter on key.
  virtual void set(const std::string& key, const std::string& value) = 0;

  // Waits until key exists, then returns its value. Throws Error(kTimeout) naming the key.
  virtual std::string get(const std::string& key, Deadline deadline) = 0;

  // Atomically adds delta to the integer stored at key (missing = 0) and returns the new value.
  virtual int64_t add(const std::string& key, int64_t delta) = 0;

  // Returns the keys of `keys` that do not exist yet (empty: all present). Never blocks long.
  virtual std::vector<std::string> missing(const std::vector<std::string>& keys) = 0;

  // Waits until every key exists. Throws Error(kTimeout) listing the keys still missing.
  virtual void wait(const std::vector<std::string>& keys, Deadline deadline) = 0;

  // Removes key; returns whether it existed.
  virtual bool remove(const std::string& key) = 0;

  // Human-readable location for error messages ("tcp 10.0.0.1:29500", "file /mnt/x").
  virtual std::string describe() const = 0;
};

}  // namespace tutti::bootstrap
