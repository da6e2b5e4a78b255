#include "support/file_io.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

namespace cleave {

Expected<std::string> read_file(std::string const& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return Error(ErrorCode::io_error, "cannot open '" + path +
                                          "' for reading: " + std::strerror(errno) +
                                          "; check the path and its permissions");
  }
  std::ostringstream buf;
  buf << in.rdbuf();
  if (in.bad()) return Error(ErrorCode::io_error, "error while reading '" + path + "'");
  return buf.str();
}

Status write_file_atomic(std::string const& path, std::string_view contents) {
  std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) {
      return Error(ErrorCode::io_error, "cannot open '" + tmp +
                                            "' for writing: " + std::strerror(errno) +
                                            "; check that the directory exists and is writable");
    }
    out.write(contents.data(), static_cast<std::streamsize>(contents.size()));
    out.flush();
    if (!out) {
      std::remove(tmp.c_str());
      return Error(ErrorCode::io_error, "error while writing '" + tmp + "' (disk full?)");
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::string why = std::strerror(errno);
    std::remove(tmp.c_str());
    return Error(ErrorCode::io_error, "cannot rename '" + tmp + "' to '" + path + "': " + why);
  }
  return Status::ok();
}

}  // namespace cleave
