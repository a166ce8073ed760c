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
// In UTF-8 (Utf8FromModified), as every name lookback writes.
std::string PrettyMethod(std::string_view internal_class, std::string_view name, std::string_view descriptor);

// The JVM's strings (classfile names, JVMTI's names, GetStringUTFChars) are
// in modified UTF-8: U+0000 as C0 80, and a character past U+FFFF as two
// 3-byte surrogate halves (ED A0..AF xx ED B0..BF xx). Dumps, exports and
// globs are UTF-8: this writes a pair as its 4-byte character, U+0000 and an
// unpaired half as U+FFFD. UTF-8 has neither sequence, so UTF-8 comes back
// unchanged.
bool HasModifiedUtf8(std::string_view s);
std::string Utf8FromModified(std::string_view s);

}  // namespace lookback::jvm
