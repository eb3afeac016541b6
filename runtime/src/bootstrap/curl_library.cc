#include "bootstrap/curl_library.hpp"

#include "core/error.hpp"
#include "core/shared_library.hpp"

namespace tutti::bootstrap {
namespace {

CurlLibrary load() {
  static constexpr const char* kNames[] = {"libcurl.so.4", "libcurl-gnutls.so.4"};
  SharedLibrary library(kNames, SharedLibrary::Scope::kLocal);
  if (!library.loaded())
    throw make_error(ErrorCode::kConfig,
                     "an etcd store needs libcurl, which could not be loaded ({}): install it "
                     "(Debian and Ubuntu: apt install libcurl4; RHEL: dnf install libcurl)",
                     library.load_errors());
  CurlLibrary lib{};
  library.bind("curl_global_init", lib.global_init);
  library.bind("curl_easy_init", lib.easy_init);
  library.bind("curl_easy_setopt", lib.easy_setopt);
  library.bind("curl_easy_perform", lib.easy_perform);
  library.bind("curl_easy_getinfo", lib.easy_getinfo);
  library.bind("curl_easy_cleanup", lib.easy_cleanup);
  library.bind("curl_easy_strerror", lib.easy_strerror);
  library.bind("curl_slist_append", lib.slist_append);
  library.bind("curl_slist_free_all", lib.slist_free_all);
  if (!library.missing().empty())
    throw make_error(ErrorCode::kConfig,
                     "the libcurl found lacks {}: install libcurl 7.50 or later",
                     library.missing());
  library.keep_loaded();
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
