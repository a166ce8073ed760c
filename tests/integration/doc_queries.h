// The example queries of a doc page, so tests run exactly what the docs show.
#pragma once

#include <fstream>
#include <map>
#include <sstream>
#include <string>

namespace lookback::testing {

// The ```sql blocks of `doc` (relative to the source tree) that start with
// "-- TAG: ...", by TAG; only within the section starting at `section` (up to
// the next "## " heading) when it is not empty.
inline std::map<std::string, std::string> DocQueries(const std::string& doc_path, const std::string& section = "") {
  std::ifstream f(std::string(LOOKBACK_SOURCE_DIR) + "/" + doc_path);
  std::stringstream ss;
  ss << f.rdbuf();
  std::string text = ss.str();
  std::map<std::string, std::string> queries;
  if (!section.empty()) {
    const size_t start = text.find(section);
    if (start == std::string::npos) return queries;
    const size_t next = text.find("\n## ", start + 1);
    text = text.substr(start, next == std::string::npos ? std::string::npos : next - start);
  }
  size_t at = 0;
  while ((at = text.find("```sql\n", at)) != std::string::npos) {
    at += 7;
    const size_t end = text.find("```", at);
    if (end == std::string::npos) break;
    const std::string q = text.substr(at, end - at);
    at = end + 3;
    if (q.rfind("-- ", 0) != 0) continue;
    const size_t colon = q.find(':');
    if (colon == std::string::npos) continue;
    queries[q.substr(3, colon - 3)] = q;
  }
  return queries;
}

}  // namespace lookback::testing
