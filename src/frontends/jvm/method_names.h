// Java method names as lookback shows them: ART's PrettyMethod style,
//   "void com.example.Foo.bar(java.lang.String, int)",
// built from what a classfile or JVMTI gives (internal class name, method
// name, descriptor). Pure functions: no JVM needed, unit-tested.
#pragma once

#include <string>
#include <string_view>

namespace lookback::jvm {

// "com/example/Foo" -> "com.example.Foo".
std::string JavaClassName(std::string_view internal_name);
// One field descriptor ("I", "[Ljava/lang/String;") -> "int", "java.lang.String[]".
// Consumes it from the front of *desc; returns "" (and leaves *desc empty) if malformed.
std::string JavaTypeName(std::string_view* desc);
// PrettyMethod: "<return> <class>.<name>(<params>)"; a malformed descriptor is kept verbatim.
std::string PrettyMethod(std::string_view internal_class, std::string_view name, std::string_view descriptor);

}  // namespace lookback::jvm
