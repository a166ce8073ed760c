// Reading an SQLite database from a test (lookback sql's output): rows as
// text, a failed query a test failure.
#pragma once

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <string>
#include <vector>

namespace lookback::testing {

using Rows = std::vector<std::vector<std::string>>;

class Db {
 public:
  explicit Db(const std::string& path) {
    EXPECT_EQ(sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK) << path;
  }
  ~Db() { sqlite3_close(db_); }
  // Rows as text (NULL as "NULL"); a failed query fails the test and returns {}.
  Rows Query(const std::string& sql) {
    Rows rows;
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &s, nullptr) != SQLITE_OK) {
      ADD_FAILURE() << sqlite3_errmsg(db_) << "\nin: " << sql;
      return rows;
    }
    int rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
      std::vector<std::string> row;
      for (int i = 0; i < sqlite3_column_count(s); ++i) {
        const unsigned char* t = sqlite3_column_text(s, i);
        row.push_back(t ? reinterpret_cast<const char*>(t) : "NULL");
      }
      rows.push_back(std::move(row));
    }
    if (rc != SQLITE_DONE) ADD_FAILURE() << sqlite3_errmsg(db_) << "\nin: " << sql;
    sqlite3_finalize(s);
    return rows;
  }
  int64_t Int(const std::string& sql) {
    Rows r = Query(sql);
    if (r.size() != 1 || r[0].size() != 1) {
      ADD_FAILURE() << "expected one value from: " << sql;
      return -1;
    }
    return r[0][0] == "NULL" ? 0 : std::stoll(r[0][0]);
  }

 private:
  sqlite3* db_ = nullptr;
};

}  // namespace lookback::testing
