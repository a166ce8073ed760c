// Running queries with DuckDB (tests/fleet/duckdb_queries.mjs, through Node)
// from a test: the independent reader of lookback's Parquet files.
#pragma once

#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "../integration/harness.h"
#include "../integration/sqlite_db.h"
#include "exporters/json_util.h"

namespace lookback::testing {

// "" when DuckDB can run (node, npm and the pinned package installed by
// tests/fleet/setup.sh), else why not: the caller skips with that message.
// Only missing node/npm is a reason to skip; a failed install fails the test.
inline std::string DuckDbUnavailable() {
  static const std::pair<std::string, bool> why = [] {
    RunResult r = RunProgram({"/bin/bash", std::string(LOOKBACK_SOURCE_DIR) + "/tests/fleet/setup.sh"}, {}, "", 600);
    if (r.exit_code == 0) return std::pair<std::string, bool>{"", false};
    if (r.exit_code == 77) return std::pair<std::string, bool>{"node/npm absent: " + r.err, false};
    return std::pair<std::string, bool>{"tests/fleet/setup.sh failed (npm ci): " + r.err, true};
  }();
  if (why.second) ADD_FAILURE() << why.first;
  return why.first;
}

inline std::string Unescape(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 1 < s.size()) {
      const char c = s[++i];
      out.push_back(c == 't' ? '\t' : c == 'n' ? '\n' : c);
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

// Runs each (tag, sql) with DuckDB, the dataset's tables as views. Returns
// tag -> rows; a failed query is a test failure.
inline std::map<std::string, Rows> DuckDbQueries(const std::string& dataset,
                                                 const std::vector<std::pair<std::string, std::string>>& queries,
                                                 const std::string& work_dir) {
  std::string json = "[";
  for (const auto& [tag, sql] : queries) {
    if (json.size() > 1) json += ",";
    json += "{\"tag\":";
    exporters::AppendJsonString(&json, tag);
    json += ",\"sql\":";
    exporters::AppendJsonString(&json, sql);
    json += "}";
  }
  json += "]";
  const std::string qfile = work_dir + "/duckdb-queries.json";
  std::ofstream(qfile) << json;
  RunResult r = RunProgram({"node", std::string(LOOKBACK_SOURCE_DIR) + "/tests/fleet/duckdb_queries.mjs", dataset, qfile},
                           {}, "", 300);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::map<std::string, Rows> out;
  std::istringstream in(r.out);
  std::string line, tag;
  while (std::getline(in, line)) {
    if (line.rfind("## ", 0) == 0) {
      tag = line.substr(3);
      out[tag];
      continue;
    }
    if (line.rfind("!ERROR", 0) == 0) {
      ADD_FAILURE() << "DuckDB: " << tag << ": " << line;
      continue;
    }
    std::vector<std::string> row;
    size_t at = 0;
    while (true) {
      const size_t tab = line.find('\t', at);
      row.push_back(Unescape(line.substr(at, tab == std::string::npos ? std::string::npos : tab - at)));
      if (tab == std::string::npos) break;
      at = tab + 1;
    }
    out[tag].push_back(std::move(row));
  }
  return out;
}

}  // namespace lookback::testing
