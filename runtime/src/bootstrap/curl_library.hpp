// libcurl, loaded the first time an etcd store needs it rather than linked: libtutti's own
// dependencies stay what a CPU job in a slim container has, and a job that never names etcd never
// loads it. Only the headers are needed to build (libcurl4-openssl-dev).
#pragma once

#define CURL_DISABLE_TYPECHECK
#include <curl/curl.h>

namespace tutti::bootstrap {

// The libcurl entry points tutti calls, named without their `curl_` prefix.
struct CurlLibrary {
  decltype(&::curl_global_init) global_init;
  decltype(&::curl_easy_init) easy_init;
  decltype(&::curl_easy_setopt) easy_setopt;
  decltype(&::curl_easy_perform) easy_perform;
  decltype(&::curl_easy_getinfo) easy_getinfo;
  decltype(&::curl_easy_cleanup) easy_cleanup;
  decltype(&::curl_easy_strerror) easy_strerror;
  decltype(&::curl_slist_append) slist_append;
  decltype(&::curl_slist_free_all) slist_free_all;
};

// The process's libcurl (libcurl.so.4, or Debian's GnuTLS flavour), loaded and globally
// initialised once. Error(kConfig) saying what to install when there is none.
const CurlLibrary& curl();

}  // namespace tutti::bootstrap
