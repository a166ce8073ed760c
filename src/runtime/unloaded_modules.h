// Modules the program unloads (dlclose) while traced, named in the dump's
// NOTES ("modules-unloaded"). A dump lists the modules loaded when it is
// written, so the calls into a library closed before it print as addresses,
// or take the names of a library loaded at the same address later: the note
// tells the reader which names to doubt. The runtime interposes dlclose
// (unloaded_modules.cc) and looks, after the real one, whether the library
// is gone: a dlclose that only drops a reference unloads nothing.
#pragma once
