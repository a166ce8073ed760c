// Errors as values at the boundaries that parse untrusted input (the dump
// reader, the JVM classfile parser): a message and where in the input it was
// found, or the value.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <variant>

namespace lookback {

struct Error {
  std::string message;
  uint64_t offset = 0;  // byte offset in the input being parsed
  std::string ToString() const { return message + " (at byte offset " + std::to_string(offset) + ")"; }
};

template <class T>
class Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Error e) : v_(std::move(e)) {}      // NOLINT
  bool ok() const { return v_.index() == 0; }
  T& value() { return std::get<0>(v_); }
  const T& value() const { return std::get<0>(v_); }
  const Error& error() const { return std::get<1>(v_); }

 private:
  std::variant<T, Error> v_;
};

}  // namespace lookback
