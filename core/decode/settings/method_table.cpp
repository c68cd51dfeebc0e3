#include "decode/settings/method_table.h"

#include "util/error.h"

namespace adtree::decode {

const std::vector<MethodInfo>& method_table() {
  static const std::vector<MethodInfo> t{
      {Method::Ar, "ar", Family::Ar, false},
      {Method::Static, "static", Family::Tree, true},
      {Method::Dynamic, "dynamic", Family::Tree, true},
      {Method::Adt, "adt", Family::Tree, true},
      {Method::Sjd, "sjd", Family::Jacobi, false},
      {Method::PathSpec, "pathspec", Family::Jacobi, false},
      {Method::SjdPac, "sjd-pac", Family::Jacobi, false},
      {Method::Pjd, "pjd", Family::Jacobi, false},
  };
  return t;
}

const MethodInfo& method_info(Method m) {
  for (const auto& i : method_table()) {
    if (i.method == m) return i;
  }
  throw Error("unknown method id (internal error)");
}

std::string to_string(Method m) {
  return method_info(m).key;
}

Method method_from_string(const std::string& key) {
  std::string list;
  for (const auto& i : method_table()) {
    if (key == i.key) return i.method;
    list += (list.empty() ? "" : ", ") + std::string(i.key);
  }
  throw Error("unknown method '" + key + "' (known: " + list + ")");
}

}  // namespace adtree::decode
