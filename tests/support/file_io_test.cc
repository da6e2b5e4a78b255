#include <filesystem>
#include <gtest/gtest.h>

#include "support/file_io.h"

namespace cleave {
namespace {

TEST(FileIo, AtomicWriteThenRead) {
  auto dir = std::filesystem::temp_directory_path() / "cleave_file_io_test";
  std::filesystem::create_directories(dir);
  std::string path = (dir / "a.txt").string();
  ASSERT_TRUE(write_file_atomic(path, "hello").is_ok());
  ASSERT_TRUE(write_file_atomic(path, "world").is_ok());
  auto text = read_file(path);
  ASSERT_TRUE(text.has_value());
  EXPECT_EQ(*text, "world");
  // No temporary left behind.
  int files = 0;
  for (auto const& entry : std::filesystem::directory_iterator(dir))
    files += entry.is_regular_file();
  EXPECT_EQ(files, 1);
  std::filesystem::remove_all(dir);
}

TEST(FileIo, MissingFileAndDirectoryAreErrors) {
  auto missing = read_file("/nonexistent/cleave/x.json");
  ASSERT_FALSE(missing.has_value());
  EXPECT_EQ(missing.error().code(), ErrorCode::io_error);
  EXPECT_NE(missing.error().message().find("/nonexistent/cleave/x.json"), std::string::npos);
  auto st = write_file_atomic("/nonexistent/cleave/x.json", "x");
  ASSERT_FALSE(st.is_ok());
  EXPECT_EQ(st.error().code(), ErrorCode::io_error);
}

}  // namespace
}  // namespace cleave
