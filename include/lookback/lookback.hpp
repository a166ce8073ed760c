// lookback public C++ API: thin wrappers over lookback.h.
#pragma once

#include <string>

#include "lookback/lookback.h"

namespace lookback {

// Queue a dump of every ring; returns at once. False if lookback is not running.
LOOKBACK_NO_INSTRUMENT inline bool dump(const char* reason) { return lb_dump(reason) == 0; }

// Write a dump and wait for it. Returns the dump's path, or an empty string
// with the error in *error.
LOOKBACK_NO_INSTRUMENT inline std::string dump_sync(const char* reason, std::string* error = nullptr) {
  char buf[4096];
  if (lb_dump_sync(reason, buf, sizeof buf) == 0) return buf;
  if (error) *error = buf;
  return {};
}

// RAII scope (see lb_scope_begin): LOOKBACK_SCOPE("frame");
class Scope {
 public:
  LOOKBACK_NO_INSTRUMENT explicit Scope(const char* name) : name_(name) { lb_scope_begin(name); }
  LOOKBACK_NO_INSTRUMENT ~Scope() { lb_scope_end(name_); }
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;

 private:
  const char* name_;
};

}  // namespace lookback

#define LOOKBACK_SCOPE_CAT2(a, b) a##b
#define LOOKBACK_SCOPE_CAT(a, b) LOOKBACK_SCOPE_CAT2(a, b)
#define LOOKBACK_SCOPE(name) ::lookback::Scope LOOKBACK_SCOPE_CAT(lookback_scope_, __LINE__)(name)
