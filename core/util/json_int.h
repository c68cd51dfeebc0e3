// Strict integer (and typed field) reads from JSON for every loader of untrusted files. nlohmann's
// get<int64_t>() converts any number: 2.5 becomes 2, true becomes 1, and a double beyond the
// integer range is undefined behaviour (found by fuzzing, docs/reliability.md "Fuzzing"). These
// accept JSON integers that fit the target type and throw adtree::Error naming the field for
// anything else.
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "util/error.h"

namespace adtree {

template <typename T = int64_t>
T json_int(const nlohmann::json& v, const std::string& what) {
  static_assert(std::is_integral_v<T> && std::is_signed_v<T>, "signed integer types only");
  bool ok = false;
  if (v.is_number_unsigned()) {
    ok = v.get<uint64_t>() <= uint64_t(std::numeric_limits<T>::max());
  } else if (v.is_number_integer()) {
    const int64_t x = v.get<int64_t>();
    ok = x >= int64_t(std::numeric_limits<T>::min()) && x <= int64_t(std::numeric_limits<T>::max());
  }
  if (!ok) {
    throw Error("'" + what + "' must be an integer" + (v.is_number_integer() ? " in range" : "") +
                ", got " + v.dump().substr(0, 40));
  }
  return static_cast<T>(v.get<int64_t>());
}

// obj[key] as an integer, or `fallback` when obj has no such key (like nlohmann's value()).
template <typename T = int64_t>
T json_int(const nlohmann::json& obj, const char* key, T fallback) {
  if (!obj.is_object()) throw Error(std::string("expected an object holding '") + key + "'");
  const auto it = obj.find(key);
  return it == obj.end() ? fallback : json_int<T>(*it, key);
}

// obj[key] as the fallback's type (a number for double, a boolean for bool, a string), or
// `fallback` when obj has no such key: like nlohmann's value(), but another type is an error naming
// the key instead of a "type_error.302".
template <typename T>
T json_field(const nlohmann::json& obj, const char* key, const T& fallback) {
  static_assert(
      std::is_same_v<T, double> || std::is_same_v<T, bool> || std::is_same_v<T, std::string>,
      "json_field reads numbers, booleans and strings (json_int: integers)");
  if (!obj.is_object()) throw Error(std::string("expected an object holding '") + key + "'");
  const auto it = obj.find(key);
  if (it == obj.end()) return fallback;
  const bool ok = std::is_same_v<T, double> ? it->is_number()
                  : std::is_same_v<T, bool> ? it->is_boolean()
                                            : it->is_string();
  if (!ok) {
    const char* want = std::is_same_v<T, double> ? "a number"
                       : std::is_same_v<T, bool> ? "true or false"
                                                 : "a string";
    throw Error(std::string("'") + key + "' must be " + want + ", got " + it->dump().substr(0, 40));
  }
  return it->template get<T>();
}

template <typename T = int64_t>
std::vector<T> json_ints(const nlohmann::json& v, const std::string& what) {
  if (!v.is_array()) throw Error("'" + what + "' must be a list of integers");
  std::vector<T> out;
  out.reserve(v.size());
  for (const auto& e : v) out.push_back(json_int<T>(e, what));
  return out;
}

}  // namespace adtree
