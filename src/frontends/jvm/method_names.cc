#include "frontends/jvm/method_names.h"

#include <cstdint>

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
    return HasModifiedUtf8(r) ? Utf8FromModified(r) : r;
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
  return HasModifiedUtf8(out) ? Utf8FromModified(out) : out;
}

bool HasModifiedUtf8(std::string_view s) {
  for (size_t i = 0; i + 1 < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]), next = static_cast<unsigned char>(s[i + 1]);
    if ((c == 0xC0 && next == 0x80) || (c == 0xED && next >= 0xA0)) return true;
  }
  return false;
}

std::string Utf8FromModified(std::string_view s) {
  constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD
  auto byte = [&](size_t i) { return i < s.size() ? static_cast<unsigned char>(s[i]) : 0u; };
  // A surrogate half at i (ED A0..BF xx): its UTF-16 code unit, else 0.
  auto half = [&](size_t i) -> uint32_t {
    if (byte(i) != 0xED || (byte(i + 1) & 0xE0) != 0xA0 || (byte(i + 2) & 0xC0) != 0x80) return 0;
    return 0xD000u | ((byte(i + 1) & 0x3Fu) << 6) | (byte(i + 2) & 0x3Fu);
  };
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    if (byte(i) == 0xC0 && byte(i + 1) == 0x80) {
      out.append(kReplacement);
      i += 2;
    } else if (const uint32_t hi = half(i)) {
      const uint32_t lo = half(i + 3);
      if (hi < 0xDC00 && lo >= 0xDC00) {
        const uint32_t cp = 0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00);
        out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
        i += 6;
      } else {
        out.append(kReplacement);
        i += 3;
      }
    } else {
      out.push_back(s[i++]);
    }
  }
  return out;
}

}  // namespace lookback::jvm
