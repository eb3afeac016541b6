#include "core/shared_library.hpp"

#include <dlfcn.h>

namespace tutti {

SharedLibrary::SharedLibrary(std::span<const char* const> names, Scope scope) {
  const int flags = RTLD_NOW | (scope == Scope::kGlobal ? RTLD_GLOBAL : RTLD_LOCAL);
  for (const char* name : names) {
    handle_ = dlopen(name, flags);
    if (handle_ != nullptr) {
      loaded_ = close_ = true;
      name_ = name;
      return;
    }
    const char* why = dlerror();
    if (!load_errors_.empty()) load_errors_ += "; ";
    load_errors_ += why != nullptr ? why : name;
  }
}

SharedLibrary SharedLibrary::process(std::string_view description) {
  return SharedLibrary(RTLD_DEFAULT, description);
}

SharedLibrary::~SharedLibrary() {
  if (close_) dlclose(handle_);
}

void* SharedLibrary::find(const char* symbol) {
  void* address = loaded_ ? dlsym(handle_, symbol) : nullptr;
  if (address == nullptr) {
    if (!missing_.empty()) missing_ += ", ";
    missing_ += symbol;
  }
  return address;
}

}  // namespace tutti
