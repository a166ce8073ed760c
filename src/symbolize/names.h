// How a pattern matches a function's name, everywhere names are matched
// (signatures, waiting functions, globs over Java and C++ names): a
// shell-style glob against the whole demangled name, the name without its
// parameter list, its last component, or its short name.
#pragma once

#include <string_view>

namespace lookback::symbolize {

// Without leading and trailing blanks (space, tab, CR).
std::string_view Trim(std::string_view s);

// Shell-style glob over the whole string.
bool GlobMatch(std::string_view pattern, std::string_view text);
// "ns::Foo<int>::bar(int) const" -> "ns::Foo<int>::bar" (no parameter list,
// no return type: "int ns::get<int>()" -> "ns::get<int>").
std::string_view WithoutParameters(std::string_view demangled);
// "ns::Foo<int>::bar<char>(int) const" -> "bar<char>" (last component).
std::string_view LastComponent(std::string_view demangled);
// "ns::Foo<int>::bar<char>(int) const" -> "bar" (last component, no template arguments).
std::string_view ShortName(std::string_view demangled);
// Whether a pattern matches a demangled name: the full name, the name
// without its parameter list, its last component or its short name.
bool NameMatches(std::string_view pattern, std::string_view demangled);

}  // namespace lookback::symbolize
