// The two directions between the public tutti::Store (durations, for callers and their own stores)
// and the internal bootstrap::Store (Deadlines): a caller's store used inside tutti, and tutti's
// stores handed to callers.
#pragma once

#include <memory>

#include "bootstrap/store.hpp"
#include "tutti/store.hpp"

namespace tutti::bootstrap {

// A caller's Store as tutti uses it.
std::unique_ptr<Store> adopt_user_store(std::shared_ptr<tutti::Store> store);

// One of tutti's stores as a caller sees it.
std::shared_ptr<tutti::Store> expose_store(std::unique_ptr<Store> store);

}  // namespace tutti::bootstrap
