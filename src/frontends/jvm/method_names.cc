#include "frontends/jvm/method_names.h"

namespace lookback::jvm {

std::string JavaClassName(std::string_view internal_name) {
  std::string out(internal_name);
  for (char& c : out) {
    if (c == '/') c = '.';
  }
  return out;
}

std::string JavaTypeName(std::string_view* desc) {
  size_t dims = 0;
  while (!desc->empty() && desc->front() == '[') {
    ++dims;
    desc->remove_prefix(1);
  }
  if (desc->empty()) return "";
  std::string base;
  const char c = desc->front();
  desc->remove_prefix(1);
  switch (c) {
    case 'B': base = "byte"; break;
    case 'C': base = "char"; break;
    case 'D': base = "double"; break;
    case 'F': base = "float"; break;
    case 'I': base = "int"; break;
    case 'J': base = "long"; break;
    case 'S': base = "short"; break;
    case 'Z': base = "boolean"; break;
    case 'V': base = "void"; break;
    case 'L': {
      const size_t semi = desc->find(';');
      if (semi == std::string_view::npos || semi == 0) {
        *desc = {};
        return "";
      }
      base = JavaClassName(desc->substr(0, semi));
      desc->remove_prefix(semi + 1);
      break;
    }
    default:
      *desc = {};
      return "";
  }
  for (size_t i = 0; i < dims; ++i) base += "[]";
  return base;
}

std::string PrettyMethod(std::string_view internal_class, std::string_view name, std::string_view descriptor) {
  const std::string owner = JavaClassName(internal_class);
  std::string_view d = descriptor;
  if (d.empty() || d.front() != '(') return owner + "." + std::string(name) + std::string(descriptor);
  d.remove_prefix(1);
  std::string params;
  while (!d.empty() && d.front() != ')') {
    const std::string t = JavaTypeName(&d);
    if (t.empty()) return owner + "." + std::string(name) + std::string(descriptor);
    if (!params.empty()) params += ", ";
    params += t;
  }
  if (d.empty()) return owner + "." + std::string(name) + std::string(descriptor);
  d.remove_prefix(1);  // ')'
  const std::string ret = JavaTypeName(&d);
  if (ret.empty() || !d.empty()) return owner + "." + std::string(name) + std::string(descriptor);
  return ret + " " + owner + "." + std::string(name) + "(" + params + ")";
}

}  // namespace lookback::jvm
