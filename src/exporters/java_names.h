// The inverse of the JVM agent's PrettyMethod names (src/frontends/jvm/
// method_names.h): "void com.example.Foo.bar(java.lang.String, int[])" back to
// class "com.example.Foo", name "bar" and descriptor "(Ljava/lang/String;[I)V",
// which ART's .trace method table wants as separate columns.
#pragma once

#include <string>
#include <string_view>

namespace lookback::exporters {

struct JavaMethodName {
  std::string cls, name, descriptor;
};

// One Java type as PrettyMethod spells it ("int", "java.lang.String[][]") to
// its descriptor ("I", "[[Ljava/lang/String;"); "" if it is not one.
inline std::string JavaTypeDescriptor(std::string_view t) {
  std::string dims;
  while (t.size() >= 2 && t.substr(t.size() - 2) == "[]") {
    dims += '[';
    t.remove_suffix(2);
  }
  if (t.empty()) return "";
  static constexpr std::pair<std::string_view, char> kPrimitive[] = {
      {"byte", 'B'}, {"char", 'C'}, {"double", 'D'}, {"float", 'F'}, {"int", 'I'},
      {"long", 'J'}, {"short", 'S'}, {"boolean", 'Z'}, {"void", 'V'}};
  for (const auto& [name, code] : kPrimitive) {
    if (t == name) return dims + code;
  }
  for (char c : t) {
    if (c == ' ' || c == '(' || c == ')' || c == ',' || c == '<' || c == '>') return "";
  }
  std::string out = dims + "L";
  for (char c : t) out += c == '.' ? '/' : c;
  return out + ";";
}

// False if `pretty` is not in PrettyMethod form (then nothing is set).
inline bool SplitJavaMethod(std::string_view pretty, JavaMethodName* out) {
  const size_t space = pretty.find(' ');
  const size_t open = pretty.find('(');
  if (space == std::string_view::npos || open == std::string_view::npos || open < space || pretty.back() != ')') return false;
  const std::string ret = JavaTypeDescriptor(pretty.substr(0, space));
  const std::string_view qualified = pretty.substr(space + 1, open - space - 1);
  const size_t dot = qualified.rfind('.');
  if (ret.empty() || dot == std::string_view::npos || dot == 0 || dot + 1 == qualified.size()) return false;
  std::string params;
  std::string_view rest = pretty.substr(open + 1, pretty.size() - open - 2);
  while (!rest.empty()) {
    size_t comma = rest.find(", ");
    const std::string_view t = rest.substr(0, comma);
    const std::string d = JavaTypeDescriptor(t);
    if (d.empty() || d == "V") return false;
    params += d;
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 2);
  }
  out->cls = std::string(qualified.substr(0, dot));
  out->name = std::string(qualified.substr(dot + 1));
  out->descriptor = "(" + params + ")" + ret;
  return true;
}

}  // namespace lookback::exporters
