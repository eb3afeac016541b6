#include "bootstrap/curl_library.hpp"

#include <dlfcn.h>

#include <string>

#include "core/error.hpp"

namespace tutti::bootstrap {
namespace {

template <typename Pointer>
void bind(void* handle, const char* name, Pointer& slot, std::string& missing) {
  slot = reinterpret_cast<Pointer>(dlsym(handle, name));
  if (slot == nullptr) missing += fmt::format("{}{}", missing.empty() ? "" : ", ", name);
}

CurlLibrary load() {
  void* handle = nullptr;
  std::string errors;
  for (const char* name : {"libcurl.so.4", "libcurl-gnutls.so.4"}) {
    handle = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (handle != nullptr) break;
    errors += fmt::format("{}{}", errors.empty() ? "" : "; ", dlerror());
  }
  if (handle == nullptr)
    throw make_error(ErrorCode::kConfig,
                     "an etcd store needs libcurl, which could not be loaded ({}): install it "
                     "(Debian and Ubuntu: apt install libcurl4; RHEL: dnf install libcurl)",
                     errors);
  CurlLibrary lib{};
  std::string missing;
  bind(handle, "curl_global_init", lib.global_init, missing);
  bind(handle, "curl_easy_init", lib.easy_init, missing);
  bind(handle, "curl_easy_setopt", lib.easy_setopt, missing);
  bind(handle, "curl_easy_perform", lib.easy_perform, missing);
  bind(handle, "curl_easy_getinfo", lib.easy_getinfo, missing);
  bind(handle, "curl_easy_cleanup", lib.easy_cleanup, missing);
  bind(handle, "curl_easy_strerror", lib.easy_strerror, missing);
  bind(handle, "curl_slist_append", lib.slist_append, missing);
  bind(handle, "curl_slist_free_all", lib.slist_free_all, missing);
  if (!missing.empty())
    throw make_error(ErrorCode::kConfig,
                     "the libcurl found lacks {}: install libcurl 7.50 or later", missing);
  // Once, before any handle exists (older libcurls' global init is not thread-safe; the static
  // initialiser of `curl()` below runs it under the compiler's guard).
  if (CURLcode rc = lib.global_init(CURL_GLOBAL_DEFAULT); rc != CURLE_OK)
    throw make_error(ErrorCode::kSystem, "curl_global_init failed: {}", lib.easy_strerror(rc));
  return lib;
}

}  // namespace

const CurlLibrary& curl() {
  static const CurlLibrary library = load();
  return library;
}

}  // namespace tutti::bootstrap
