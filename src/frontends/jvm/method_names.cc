#include "frontends/jvm/method_names.h"

namespace lookback::jvm {

namespace {

// The appenders behind the three names: PrettyMethod runs for every traced
// method of every class the JVM loads (the class hook, before the class can
// be used), so it builds its name in one string, without temporaries.
void AppendClassName(std::string* out, std::string_view internal_name) {
  const size_t at = out->size();
  out->append(internal_name);
  for (size_t i = at; i < out->size(); ++i) {
    if ((*out)[i] == '/') (*out)[i] = '.';
  }
}

// One type from the front of `desc`, appended to out; false (desc emptied,
// out as it was) if it is not a field descriptor.
bool AppendTypeName(std::string* out, std::string_view* desc) {
  size_t dims = 0;
  while (!desc->empty() && desc->front() == '[') {
    ++dims;
    desc->remove_prefix(1);
  }
  if (desc->empty()) return false;
  const char c = desc->front();
  desc->remove_prefix(1);
  switch (c) {
    case 'B': out->append("byte"); break;
    case 'C': out->append("char"); break;
    case 'D': out->append("double"); break;
    case 'F': out->append("float"); break;
    case 'I': out->append("int"); break;
    case 'J': out->append("long"); break;
    case 'S': out->append("short"); break;
    case 'Z': out->append("boolean"); break;
    case 'V': out->append("void"); break;
    case 'L': {
      const size_t semi = desc->find(';');
      if (semi == std::string_view::npos || semi == 0) {
        *desc = {};
        return false;
      }
      AppendClassName(out, desc->substr(0, semi));
      desc->remove_prefix(semi + 1);
      break;
    }
    default:
      *desc = {};
      return false;
  }
  for (size_t i = 0; i < dims; ++i) out->append("[]");
  return true;
}

}  // namespace

std::string JavaClassName(std::string_view internal_name) {
  std::string out;
  AppendClassName(&out, internal_name);
  return out;
}

std::string JavaTypeName(std::string_view* desc) {
  std::string out;
  if (!AppendTypeName(&out, desc)) return "";
  return out;
}

// "ret owner.name(params)"; the raw form "owner.namedescriptor" when the
// descriptor is not a method descriptor.
std::string PrettyMethod(std::string_view internal_class, std::string_view name, std::string_view descriptor) {
  auto raw = [&] {
    std::string r;
    AppendClassName(&r, internal_class);
    r.append(".").append(name).append(descriptor);
    return r;
  };
  std::string_view d = descriptor;
  if (d.empty() || d.front() != '(') return raw();
  d.remove_prefix(1);
  // The parameters, read in order (a class name may hold a ')'), then the
  // return type, which the name puts first.
  std::string params;
  params.reserve(2 * d.size());
  while (!d.empty() && d.front() != ')') {
    if (!params.empty()) params.append(", ");
    if (!AppendTypeName(&params, &d)) return raw();
  }
  if (d.empty()) return raw();
  d.remove_prefix(1);  // ')'
  std::string out;
  out.reserve(internal_class.size() + name.size() + params.size() + d.size() + 16);
  if (!AppendTypeName(&out, &d) || !d.empty()) return raw();
  out.push_back(' ');
  AppendClassName(&out, internal_class);
  out.append(".").append(name).append("(").append(params).append(")");
  return out;
}

}  // namespace lookback::jvm
