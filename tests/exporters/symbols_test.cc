// Symbols for a dump read somewhere else: the traced binary moved away, found
// again by name or by build id under --symbols directories.
#include <sys/stat.h>

#include "export_fixture.h"
#include "format/reader.h"

namespace lookback::testing {
namespace {

TEST(Symbols, MovedBinaryIsFoundBySymbolsPathByNameAndByBuildId) {
  const std::string dir = FreshDir("symbols-moved");
  mkdir((dir + "/built").c_str(), 0755);
  ASSERT_EQ(RunProgram({"cp", Program("lifecycle-gcc"), dir + "/built/prog"}).exit_code, 0);
  RunResult r = RunProgram({Cli(), "record", "--dir", dir + "/dumps", "--", dir + "/built/prog", "exceptions"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto dumps = Dumps(dir + "/dumps");
  ASSERT_EQ(dumps.size(), 1u);
  ASSERT_EQ(rename((dir + "/built").c_str(), (dir + "/elsewhere").c_str()), 0);

  // Without help: a clear note and module+offset names, never garbage.
  RunResult lost = Convert(dumps[0], "folded", dir + "/lost.txt");
  ASSERT_EQ(lost.exit_code, 0) << lost.err;
  EXPECT_NE(lost.err.find("not found here"), std::string::npos) << lost.err;
  EXPECT_NE(ReadFile(dir + "/lost.txt").find(";prog+0x"), std::string::npos);
  EXPECT_EQ(ReadFile(dir + "/lost.txt").find("outer"), std::string::npos);

  // By file name in a --symbols directory.
  RunResult byname = Convert(dumps[0], "folded", dir + "/byname.txt", {"--symbols", dir + "/elsewhere"});
  ASSERT_EQ(byname.exit_code, 0) << byname.err;
  EXPECT_NE(ReadFile(dir + "/byname.txt").find(";main;outer;middle;thrower"), std::string::npos);

  // By build id: DIR/.build-id/ab/cdef... as debuginfod and distributions lay it out.
  format::Dump d = MustOpen(dumps[0]);
  const std::string hex = format::HexBuildId(d.modules[0].build_id);
  ASSERT_GT(hex.size(), 2u);
  const std::string store = dir + "/store/.build-id/" + hex.substr(0, 2);
  ASSERT_EQ(RunProgram({"mkdir", "-p", store}).exit_code, 0);
  ASSERT_EQ(RunProgram({"cp", dir + "/elsewhere/prog", store + "/" + hex.substr(2) + ".debug"}).exit_code, 0);
  RunResult byid = Convert(dumps[0], "folded", dir + "/byid.txt", {"--symbols", dir + "/store"});
  ASSERT_EQ(byid.exit_code, 0) << byid.err;
  EXPECT_NE(ReadFile(dir + "/byid.txt").find(";main;outer;middle;thrower"), std::string::npos);
}

TEST(Symbols, RebuiltBinaryIsNotTrusted) {
  const std::string dir = FreshDir("symbols-rebuilt");
  ASSERT_EQ(RunProgram({"cp", Program("lifecycle-gcc"), dir + "/prog"}).exit_code, 0);
  RunResult r = RunProgram({Cli(), "record", "--dir", dir + "/dumps", "--", dir + "/prog", "exceptions"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // Same path, another build: a different program now sits there.
  ASSERT_EQ(RunProgram({"cp", Program("hammer"), dir + "/prog"}).exit_code, 0);
  RunResult c = Convert(Dumps(dir + "/dumps")[0], "folded", dir + "/out.txt");
  ASSERT_EQ(c.exit_code, 0) << c.err;
  EXPECT_NE(c.err.find("build id differs"), std::string::npos) << c.err;
  EXPECT_EQ(ReadFile(dir + "/out.txt").find("p0"), std::string::npos) << "symbols of the wrong binary were used";
}

}  // namespace
}  // namespace lookback::testing
